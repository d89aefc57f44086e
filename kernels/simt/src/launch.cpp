// The grid driver of the CPU backend: configuration, device memory, host threads, and
// simt::launch itself (one block at a time per host thread through runtime.cpp's scheduler;
// race checking through race_rerun.cpp).
#include "simt/simt_cpu.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "access_shadow.h"
#include "allocations.h"
#include "block_writes.h"
#include "hazards.h"
#include "interleave.h"
#include "launch_sink.h"
#include "local_sites.h"
#include "memcheck.h"
#include "race_rerun.h"
#include "sched.h"

namespace simt {

namespace {

// ---------------------------------------------------------------- config ----
std::mutex g_config_mutex;
Config g_config;

}  // namespace

void set_config(const Config& c) {
  std::lock_guard lock(g_config_mutex);
  g_config = c;
}

unsigned default_host_threads() {
  static const unsigned n = std::max(std::thread::hardware_concurrency(), 1u);  // 0: unknown
  return n;
}

Config config() {
  std::lock_guard lock(g_config_mutex);
  return g_config;
}

// ---------------------------------------------------------- device memory ----
// Exact-size heap blocks so ASan reports overruns; the poison (0xFF by default) makes reads of
// never-written floats NaN, like the poison in dynamic shared memory. A large block asks for huge
// pages before the poison touches it (allocations.h).
// Under Config::memcheck, in a process with checked kernels, a guarded block (memcheck.h).
void* malloc(std::size_t bytes, std::source_location where) {
  void* p = config().memcheck && detail::g_shadow_mapped.load(std::memory_order_relaxed)
                ? detail::guarded_malloc(bytes, where.file_name(), where.line())
                : std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  detail::advise_huge_pages(p, bytes);
  detail::fill_poison(p, bytes, config().poison);
  detail::note_allocation(p, bytes, where);
  return p;
}
namespace {
// `where`: the freeing line (none for cudaDeviceReset's frees).
void free_block(void* p, bool by_reset, const std::source_location* where) {
  if (p == nullptr) return;
  const auto a = detail::allocation_of(p);
  const bool plain_block = a && a->base == p;
  detail::forget_allocation(p);
  // Memcheck's blocks go to its quarantine; under memcheck a free it cannot explain is a finding.
  if (detail::guarded_free(p, !plain_block && config().memcheck, by_reset, where)) return;
  std::free(p);
}
}  // namespace
void free(void* p, std::source_location where) { free_block(p, false, &where); }
namespace detail {
void assert_failed(const char* expr, const char* file, int line, const char* func) {
  if (!running_kernel_thread()) {
    // In a candidate's step, the step fails with these words: an abort would reach the harness
    // as a bare signal 6, the message left on the child's stderr.
    if (allocation_step_set())
      throw std::logic_error(fmt::format("host assert failed: `{}` at {}:{} in {}", expr, file, line, func));
    std::fprintf(stderr, "%s:%d: %s: Assertion `%s' failed.\n", file, line, func, expr);  // the C library's
    std::abort();
  }
  // No allocation: the fiber is abandoned, and a temporary on its stack would never be freed.
  static thread_local char message[1024];
  std::snprintf(message, sizeof message, "device assert failed: `%s` at %s:%d in %s, thread (%u,%u,%u)", expr, file,
                line, func, threadIdx.x, threadIdx.y, threadIdx.z);
  fail_running_thread(message);
}
}  // namespace detail

std::size_t device_reset() {
  const std::vector<void*> live = detail::live_allocation_bases();
  for (void* p : live) free_block(p, true, nullptr);
  return live.size();
}
// Memcheck's initcheck counts what a copy or a memset writes as written (memcheck.h).
void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind /*kind*/) {
  if (bytes == 0) return;
  std::memcpy(dst, src, bytes);
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  detail::note_written(d, d + bytes);
}
void memset(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  std::memset(dst, value, bytes);
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  detail::note_written(d, d + bytes);
}

namespace detail {
namespace {

// ----------------------------------------------------------- host threads ----
// Persistent workers: per-OS-thread fiber pools survive between launches.
class Workers {
 public:
  void run(unsigned extra, const std::function<void()>& job) {
    {
      std::unique_lock lock(m_);
      while (threads_.size() < extra) threads_.emplace_back([this, i = threads_.size()] { loop(i); });
      job_ = &job;
      active_ = extra;
      pending_ = extra;
      ++generation_;
    }
    cv_.notify_all();
    job();
    std::unique_lock lock(m_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(std::size_t index) {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job = nullptr;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (index >= active_) continue;
        job = job_;
      }
      (*job)();
      std::lock_guard lock(m_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void()>* job_ = nullptr;
  std::size_t active_ = 0;
  std::size_t pending_ = 0;
  std::uint64_t generation_ = 0;
};

Workers& workers() {
  // Leaked on purpose: joining at exit would race with static destruction, and
  // idle workers only wait on their condition variable.
  static Workers* w = new Workers();
  return *w;
}

std::mutex g_launch_mutex;  // one grid at a time: workers and config are global
// The hazard checker's writes between blocks for the grid running now (racecheck runs one host
// thread, the launching one); null otherwise. Guarded by g_launch_mutex.
BlockWrites* g_block_writes = nullptr;

// Set on the launching thread while it reports its launch to the launch sink, g_launch_mutex held:
// a sink taking that launch's uninit reads (driftscope_simt_take_uninit_reads) must not lock again.
thread_local bool tl_reporting_launch = false;

// The hazard checker of kernels built with access hooks (access_shadow.h), for the launching
// thread's checked launches. Guarded by g_launch_mutex.
AccessShadow& access_shadow() {
  static AccessShadow* s = new AccessShadow();  // leaked on purpose, like the workers
  return *s;
}

// Every block of the grid under `cfg`; throws what the lowest failing block reported.
void run_grid(const LaunchDesc& d, const Config& cfg) {
  const std::uint64_t nblocks = static_cast<std::uint64_t>(d.grid.x) * d.grid.y * d.grid.z;
  // Config::interleave on a kernel with access hooks, unless the hazard checker watches the launch
  // (it takes every hooked access): the interleaver marks what the launch writes for the hooks,
  // and more than one block runs on up to kInterleavedHostThreads host threads taking turns, in a
  // shuffled order (interleave.h).
  struct Interleaving {
    Interleaver* on = nullptr;
    std::optional<Baton> baton;
    std::vector<std::uint64_t> order;  // of the blocks: shuffled, where a baton interleaves them
    ~Interleaving() {
      if (on == nullptr) return;
      g_interleaver.store(nullptr, std::memory_order_relaxed);
      on->end_launch();
    }
  } interleaving;
  if (cfg.interleave && d.access_hooks && g_access_shadow.load(std::memory_order_relaxed) == nullptr) {
    static Interleaver* const interleaver = new Interleaver();  // leaked on purpose, like the workers
    interleaving.on = interleaver;
    if (nblocks > 1) {
      interleaving.baton.emplace(
          static_cast<unsigned>(std::min<std::uint64_t>(nblocks, kInterleavedHostThreads)));
      interleaving.order = interleaved_block_order(nblocks, cfg.seed);
    }
    interleaver->begin_launch(d, interleaving.baton ? &*interleaving.baton : nullptr);
    g_interleaver.store(interleaver, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> abort{false};
  std::mutex err_mutex;
  std::uint64_t err_block = ~std::uint64_t{0};
  std::string err;
  std::exception_ptr exc;
  Baton* const baton = interleaving.baton ? &*interleaving.baton : nullptr;
  const std::function<void()> job = [&] {
    struct Turn {  // the baton's holder alone takes blocks and runs them
      Baton* baton;
      explicit Turn(Baton* b) : baton(b) {
        if (baton != nullptr) baton->join();
      }
      ~Turn() {
        if (baton != nullptr) baton->leave();
      }
    } turn(baton);
    for (;;) {
      if (abort.load(std::memory_order_relaxed)) return;
      const std::uint64_t taken = next.fetch_add(1, std::memory_order_relaxed);
      if (taken >= nblocks) return;
      const std::uint64_t b = interleaving.order.empty() ? taken : interleaving.order[taken];
      std::string block_err;
      std::exception_ptr block_exc;
      const bool ok = run_block(d, cfg, b, block_err, block_exc);
      if (ok && g_block_writes != nullptr) g_block_writes->after_block(b);
      if (!ok) {
        std::lock_guard el(err_mutex);
        // Lowest failing block wins. Blocks are handed out in order, so every block below a failing
        // one was already taken and runs to its end: the message is the same for any thread count.
        if (b < err_block) {
          err_block = b;
          err = std::move(block_err);
          exc = block_exc;
        }
        abort = true;
      }
    }
  };
  const unsigned wanted = baton != nullptr        ? kInterleavedHostThreads
                          : cfg.host_threads == 0 ? default_host_threads()
                                                  : cfg.host_threads;
  const auto host = static_cast<unsigned>(std::min<std::uint64_t>(wanted, nblocks));
  if (host <= 1) {
    job();
  } else {
    workers().run(host - 1, job);
  }
  if (exc) std::rethrow_exception(exc);
  // The block's diagnostic names its site; the kernel's name says which launch of a step made it.
  if (err_block != ~std::uint64_t{0}) throw KernelError(fmt::format("{}: {}", kernel_name(d.kernel), err));
}

// Memcheck's findings not yet taken (take_memory_findings). Guarded by g_launch_mutex.
std::vector<std::string> g_memory_findings;
// The launches memcheck was asked to check and could not (memcheck_unchecked_note), not yet taken
// (take_uninit_reads): a run must not read their silence as clean. Guarded by g_launch_mutex.
std::vector<std::string> g_unchecked_launches;

// The hazard checker's findings between blocks (and, for a kernel with access hooks, all of them)
// of the launch running now, and the benign ones of a kernel with access hooks. Guarded by
// g_launch_mutex.
std::vector<std::string> g_block_races;
std::vector<std::string> g_benign_hooked;

// Benign hazards of launches that found no real one (racecheck_note), not yet taken with the
// uninit reads. Guarded by g_launch_mutex.
std::vector<std::string> g_hazard_notes;

// One run of the grid, watched by the hazard checker where `cfg.racecheck` asks for it: a kernel
// with access hooks through the access shadow, any other through the page faults (runtime.cpp)
// and the writes between blocks. Under a schedule rerun only the first run has racecheck, so the
// checker sees the configured schedule and the reruns (the first of them interleaved) find what
// differs: both checks, on plain and checked kernels alike.
void run_grid_watched(const LaunchDesc& d, const Config& cfg) {
  if (!cfg.racecheck) return run_grid(d, cfg);
  const bool hooked = d.access_hooks;
  std::optional<BlockWrites> writes;
  if (hooked) {
    access_shadow().begin_launch(d, cfg.poison);
    tl_access_shadow = &access_shadow();
    g_access_shadow.store(&access_shadow(), std::memory_order_relaxed);
  } else {
    writes.emplace(d);
    g_block_writes = &*writes;
    tl_note_atomics = true;
  }
  struct Unwatch {
    ~Unwatch() {
      g_block_writes = nullptr;
      tl_note_atomics = false;
      if (tl_access_shadow != nullptr) {
        tl_access_shadow = nullptr;
        g_access_shadow.store(nullptr, std::memory_order_relaxed);
        (void)access_shadow().end_launch();  // a failed launch's record must not leak either
      }
    }
  } unwatch;
  run_grid(d, cfg);
  if (writes) g_block_races = writes->take();
  if (hooked) {
    tl_access_shadow = nullptr;
    g_access_shadow.store(nullptr, std::memory_order_relaxed);
    g_block_races = access_shadow().end_launch();
    g_benign_hooked = access_shadow().take_benign();
  }
}

// The hazard checker's findings of launch `d` (`races`: those between blocks, or all of a kernel
// with access hooks): real ones go to the race sink, benign ones after them; a launch with benign
// ones alone is no failure, and they travel with its record (racecheck_note).
void report_hazards(const LaunchDesc& d, std::vector<std::string> races) {
  HazardReport found = take_hazards();
  found.real.insert(found.real.end(), races.begin(), races.end());
  found.benign.insert(found.benign.end(), g_benign_hooked.begin(), g_benign_hooked.end());
  g_benign_hooked.clear();
  const std::string& kernel = kernel_name(d.kernel);
  if (found.real.empty()) {
    for (const std::string& b : found.benign)
      g_hazard_notes.push_back(fmt::format("{}{}: {}", racecheck_note, kernel, b));
    return;
  }
  found.real.insert(found.real.end(), found.benign.begin(), found.benign.end());
  report_race(d, fmt::format("{}: {}", kernel, fmt::join(found.real, "; ")));
}
}  // namespace

void launch_impl(const LaunchDesc& d) {
  const std::uint64_t nthreads = static_cast<std::uint64_t>(d.block.x) * d.block.y * d.block.z;
  if (d.block.x == 0 || d.block.y == 0 || d.block.z == 0 || d.grid.x == 0 || d.grid.y == 0 || d.grid.z == 0 ||
      nthreads > 1024 || d.block.z > 64 || d.grid.y > 65535 || d.grid.z > 65535) {
    throw KernelError(fmt::format("simt::launch: invalid configuration grid ({},{},{}) block ({},{},{})",
                                  d.grid.x, d.grid.y, d.grid.z, d.block.x, d.block.y, d.block.z));
  }
  Config cfg = config();
  std::optional<HazardSignals> signals;  // the checker's fault and trap handlers, for this launch only
  // A kernel built with access hooks is checked through them (no faults, any platform).
  const bool hooked = cfg.racecheck && d.access_hooks;
  // A kernel with access hooks runs on one host thread, checked or not: its atomics note their
  // address in a plain global (simt_cpu.h's atomic_at), and its static __shared__ arrays may be.
  if (d.access_hooks) cfg.host_threads = 1;
  if (cfg.racecheck) {
    if (const std::string why = racecheck_unsupported(); !why.empty() && !hooked) throw KernelError(why);
    cfg.host_threads = 1;  // one scheduler, one watched arena
  }
  std::lock_guard lock(g_launch_mutex);
  if (cfg.racecheck && !hooked) signals.emplace();
  for (std::string& m : take_host_memory_findings()) g_memory_findings.push_back(std::move(m));
  // Memcheck: the launch stops at its first bad access (a KernelError from its block), which is a
  // finding, not a failure of the launch.
  const bool memchecked = cfg.memcheck && d.access_hooks && g_shadow_mapped.load(std::memory_order_relaxed);
  struct Memcheck {
    bool on;
    std::vector<std::string> found;
    bool stopped = false;  // a finding stopped the launch (its KernelError is that, not a failure)
    Memcheck(const LaunchDesc& launch, bool checked) : on(checked) {
      if (on) memcheck_begin_launch(launch);
    }
    void end() {
      if (std::exchange(on, false)) found = memcheck_end_launch(&stopped);
    }
    ~Memcheck() { end(); }
  } memcheck(d, memchecked);
  if (cfg.memcheck && !memchecked) {
    g_unchecked_launches.push_back(fmt::format("{}{}", memcheck_unchecked_note, kernel_name(d.kernel)));
    assume_all_written();  // its stores are not seen: an uninitialised read after it would be a guess
  }
  const bool timed = launch_sink_installed();
  const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  double seconds = 0;
  std::vector<std::string> block_races;  // the checker's writes between blocks
  try {
    g_block_races.clear();
    g_benign_hooked.clear();
    if (cfg.race_schedules == 0) {
      run_grid_watched(d, cfg);
      if (timed) seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      seconds = run_race_checked(d, cfg, &run_grid_watched);
    }
    block_races = std::exchange(g_block_races, {});
  } catch (const KernelError&) {
    memcheck.end();
    if (cfg.racecheck) (void)take_hazards();  // a failed launch's partial record must not leak into the next
    if (!memcheck.stopped) {
      for (std::string& m : memcheck.found) g_memory_findings.push_back(std::move(m));
      throw;
    }
    if (timed) seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } catch (...) {
    if (cfg.racecheck) (void)take_hazards();
    throw;
  }
  memcheck.end();
  for (std::string& m : memcheck.found) g_memory_findings.push_back(std::move(m));
  if (cfg.racecheck) report_hazards(d, std::move(block_races));
  if (timed) {
    struct Reporting {
      Reporting() { tl_reporting_launch = true; }
      ~Reporting() { tl_reporting_launch = false; }
    } reporting;
    report_launch(d, seconds);
  }
}

// The hazard checker's uninit reads, memcheck's findings (the host's bad frees since the last
// launch among them: a step's cleanup after its last launch), benign hazards and unchecked launches,
// then the sites of poisoned locals the launch reached.
std::vector<std::string> take_uninit_reads_impl() {
  const auto take = [] {
    std::vector<std::string> out = access_shadow().take_uninit_reads();
    for (std::string& m : take_host_memory_findings()) g_memory_findings.push_back(std::move(m));
    for (std::string& m : std::exchange(g_memory_findings, {})) out.push_back(std::move(m));
    for (std::string& m : std::exchange(g_hazard_notes, {})) out.push_back(std::move(m));
    for (std::string& m : std::exchange(g_unchecked_launches, {})) out.push_back(std::move(m));
    return out;
  };
  std::vector<std::string> out;
  if (tl_reporting_launch) {
    out = take();  // report_launch runs under launch_impl's lock
  } else {
    std::lock_guard lock(g_launch_mutex);
    out = take();
  }
  for (std::string& s : take_local_sites()) out.push_back(std::move(s));
  return out;
}

void note_atomic(const void* p, std::size_t bytes) {
  if (g_block_writes != nullptr)
    g_block_writes->atomics.emplace_back(reinterpret_cast<std::uintptr_t>(p), bytes);
}

}  // namespace detail

std::vector<std::string> take_uninit_reads() { return detail::take_uninit_reads_impl(); }

std::vector<std::string> take_memory_findings() {
  std::lock_guard lock(detail::g_launch_mutex);
  std::vector<std::string> out = std::exchange(detail::g_memory_findings, {});
  for (std::string& m : detail::take_host_memory_findings()) out.push_back(std::move(m));
  return out;
}

}  // namespace simt

extern "C" void driftscope_simt_take_uninit_reads(void (*each)(const char* message, void* user), void* user) {
  if (each == nullptr) return;
  for (const std::string& m : simt::take_uninit_reads()) each(m.c_str(), user);
}

extern "C" void driftscope_simt_begin_step(const char* name) {
  simt::detail::set_allocation_step(name == nullptr ? "" : name);
}

extern "C" void driftscope_simt_live_step_allocations(void (*each)(const char* message, void* user),
                                                      void* user) {
  if (each == nullptr) return;
  for (const std::string& m : simt::detail::live_step_allocations()) each(m.c_str(), user);
}

extern "C" void driftscope_simt_set_options(const struct simt_options* o) {
  if (o == nullptr) return;
  simt::Config c;
  const simt_options defaults{sizeof(simt_options), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  simt_options v = defaults;
  std::memcpy(&v, o, std::min<std::size_t>(o->size, sizeof v));  // an older caller's struct is shorter
  c.order = v.order == 1 ? simt::Order::reverse : v.order == 2 ? simt::Order::random : simt::Order::forward;
  c.seed = v.seed;
  c.host_threads = v.host_threads;
  c.strict_barriers = v.strict_barriers != 0;
  c.race_schedules = v.race_schedules;
  c.racecheck = v.racecheck != 0;
  c.poison = v.poison;
  c.interleave = v.interleave != 0;
  c.poison_site = v.poison_site;
  c.memcheck = v.memcheck != 0;
  simt::set_config(c);
}
