#include "launch_sinks.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "launch_log.h"
#include "simt/simt_common.h"

#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
#include "simt/simt.h"
#endif
#if defined(DRIFTSCOPE_HAVE_CUPTI)
#include "gpu/cupti_recorder.h"
#endif

namespace ds::launch_sinks {
namespace {

std::mutex g_mutex;
SimtOptions g_options;       // as configure() left them
std::string g_pending_race;  // the finding of the launch whose record comes next

// The step-allocation entry points of every installed plugin's runtime (a runtime that predates
// them has none). Guarded by g_mutex.
using BeginStep = void (*)(const char*);
using LiveStepAllocations = void (*)(void (*)(const char*, void*), void*);
// A runtime's driftscope_simt_take_uninit_reads (its src/launch_sink.h).
using TakeUninit = void (*)(void (*)(const char*, void*), void*);
struct StepAllocationEntries {
  BeginStep begin;
  LiveStepAllocations live;
  TakeUninit take = nullptr;  // none in a runtime that predates it
};
std::vector<StepAllocationEntries> g_step_entries;

// "STEP\tFILE:LINE\tBLOCKS\tBYTES" (driftscope_simt_live_step_allocations) into `into`.
void add_live_allocation(const char* message, void* into) {
  std::vector<std::string_view> f;
  std::string_view m(message);
  for (std::size_t at; (at = m.find('\t')) != std::string_view::npos; m.remove_prefix(at + 1))
    f.push_back(m.substr(0, at));
  f.push_back(m);
  if (f.size() != 4) return;  // a runtime speaking another format says nothing we could name
  LiveAllocation a{std::string(f[0]), std::string(f[1])};
  a.blocks = std::strtoull(std::string(f[2]).c_str(), nullptr, 10);
  a.bytes = std::strtoull(std::string(f[3]).c_str(), nullptr, 10);
  static_cast<std::vector<LiveAllocation>*>(into)->push_back(std::move(a));
}

simt_options to_c(const SimtOptions& o) {
  return simt_options{sizeof(simt_options),
                      static_cast<unsigned>(o.order),
                      o.seed,
                      simt_threads(o),
                      o.strict ? 1 : 0,
                      o.race_check,
                      o.racecheck ? 1 : 0,
                      o.poison,
                      0,  // interleave: the schedule rerun turns it on for its first schedule
                      o.poison_site,
                      o.memcheck ? 1 : 0};
}

// The runtime reports a launch's races (a schedule's difference, the checker's hazards) just before
// the record of the same launch, from the same thread.
void to_pending_race(const simt_race_info* info, void* /*user*/) {
  std::lock_guard lock(g_mutex);
  g_pending_race += (g_pending_race.empty() ? "" : "; ") + std::string(info->message);
}

// One message of a runtime's take_uninit_reads list (its uninit reads, the sites of poisoned locals,
// memcheck's findings, its unchecked launches) filed in `into`, a LaunchRecord.
void file_runtime_message(const char* m, void* into) {
  LaunchRecord& rec = *static_cast<LaunchRecord*>(into);
  const std::string_view v(m);
  if (v.starts_with(simt::memcheck_unchecked_note)) {
    rec.unchecked_by_memcheck = true;
    return;
  }
  (v.starts_with(simt::local_site_note) ? rec.local_sites
   : v.starts_with(simt::memcheck_note) ? rec.memory
                                        : rec.uninit)
      .emplace_back(m);
}

// `user`: the library's TakeUninit where it has one. The launch just reported is the last one, so
// what it returns is that launch's.
void to_launch_log(const simt_launch_info* info, void* user) {
  LaunchRecord r;
  {
    std::lock_guard lock(g_mutex);
    r.race = std::exchange(g_pending_race, {});
  }
  if (user != nullptr) reinterpret_cast<TakeUninit>(user)(&file_runtime_message, &r);
  r.kernel = info->kernel;
  r.backend = "simt";
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = info->grid[i];
    r.block[i] = info->block[i];
  }
  r.dyn_smem_bytes = info->dyn_smem_bytes;
  r.duration_us = info->seconds * 1e6;
  r.emulated = true;
  launch_log::record(std::move(r));
}

#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
void take_in_process(void (*each)(const char*, void*), void* user) {
  for (const std::string& m : simt::take_uninit_reads()) each(m.c_str(), user);
}
#endif

}  // namespace

bool install_in_library(void* dl_handle) {
  using Setter = void (*)(simt_launch_sink, void*);
  void* sym = ::dlsym(dl_handle, "driftscope_simt_set_launch_sink");
  if (sym == nullptr) return false;
  reinterpret_cast<Setter>(sym)(&to_launch_log, ::dlsym(dl_handle, "driftscope_simt_take_uninit_reads"));
  using RaceSetter = void (*)(simt_race_sink, void*);
  using OptionsSetter = void (*)(const simt_options*);
  void* race = ::dlsym(dl_handle, "driftscope_simt_set_race_sink");
  void* options = ::dlsym(dl_handle, "driftscope_simt_set_options");
  SimtOptions o;
  {
    std::lock_guard lock(g_mutex);
    o = g_options;
  }
  if (race == nullptr || options == nullptr) {
    if (o != SimtOptions{})
      fmt::print(stderr,
                 "driftscope: the plugin's SIMT runtime predates --simt-order/--race-check; its kernels run "
                 "with the runtime's defaults (rebuild the plugin against this driftscope)\n");
    return true;
  }
  reinterpret_cast<RaceSetter>(race)(&to_pending_race, nullptr);
  const simt_options c = to_c(o);
  reinterpret_cast<OptionsSetter>(options)(&c);
  auto* begin = reinterpret_cast<BeginStep>(::dlsym(dl_handle, "driftscope_simt_begin_step"));
  auto* live =
      reinterpret_cast<LiveStepAllocations>(::dlsym(dl_handle, "driftscope_simt_live_step_allocations"));
  if (begin != nullptr && live != nullptr) {
    std::lock_guard lock(g_mutex);
    const bool known = std::any_of(g_step_entries.begin(), g_step_entries.end(),
                                   [&](const StepAllocationEntries& e) { return e.begin == begin; });
    if (!known)
      g_step_entries.push_back(
          {begin, live, reinterpret_cast<TakeUninit>(::dlsym(dl_handle, "driftscope_simt_take_uninit_reads"))});
  }
  return true;
}

void begin_step(const std::string& name) {
  std::vector<StepAllocationEntries> entries;
  {
    std::lock_guard lock(g_mutex);
    entries = g_step_entries;
  }
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
  driftscope_simt_begin_step(name.c_str());
#endif
  for (const StepAllocationEntries& e : entries) e.begin(name.c_str());
}

void end_step() {
  std::vector<StepAllocationEntries> entries;
  {
    std::lock_guard lock(g_mutex);
    entries = g_step_entries;
  }
  LaunchRecord late;
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
  take_in_process(&file_runtime_message, &late);
#endif
  for (const StepAllocationEntries& e : entries)
    if (e.take != nullptr) e.take(&file_runtime_message, &late);
  if (!late.memory.empty() || !late.uninit.empty() || !late.local_sites.empty()) {
    late.kernel = "(host code)";
    late.backend = "simt";
    launch_log::amend_last(std::move(late));
  }
  begin_step("");
}

std::vector<LiveAllocation> live_step_allocations() {
  std::vector<StepAllocationEntries> entries;
  {
    std::lock_guard lock(g_mutex);
    entries = g_step_entries;
  }
  std::vector<LiveAllocation> out;
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
  driftscope_simt_live_step_allocations(&add_live_allocation, &out);
#endif
  for (const StepAllocationEntries& e : entries) e.live(&add_live_allocation, &out);
  return out;
}

std::string racecheck_unsupported() {
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
  return simt::racecheck_unsupported();
#else
  return "this driftscope was built without the SIMT runtime";
#endif
}

SimtOptions configured() {
  std::lock_guard lock(g_mutex);
  return g_options;
}

void configure(const SimtOptions& o) {
  {
    std::lock_guard lock(g_mutex);
    g_options = o;
  }
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
  driftscope_simt_set_race_sink(&to_pending_race, nullptr);
  const simt_options c = to_c(o);
  driftscope_simt_set_options(&c);
#endif
}

void start(std::string_view backend) {
  if (backend == "simt") {
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
    // The launch's uninit reads and poisoned locals come with its record, as from a plugin's runtime.
    static const bool installed =
        (driftscope_simt_set_launch_sink(&to_launch_log, reinterpret_cast<void*>(&take_in_process)), true);
    (void)installed;
#endif
    return;
  }
#if defined(DRIFTSCOPE_HAVE_CUPTI)
  const std::string why = gpu::cupti_recorder::start();
#else
  const std::string why = "this driftscope was built without CUPTI";
#endif
  if (!why.empty())
    fmt::print(stderr, "driftscope: no launch records for the {} kernels: {}\n", backend, why);
}

}  // namespace ds::launch_sinks
