#include "race_rerun.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "allocations.h"
#include "launch_sink.h"

namespace simt::detail {
namespace {

struct RaceSink {
  simt_race_sink fn;
  void* user;
};
std::atomic<const RaceSink*> g_race_sink{nullptr};

std::string order_name(const Config& c) {
  switch (c.order) {
    case Order::forward: return "forward";
    case Order::reverse: return "reverse";
    case Order::random: return fmt::format("random:{}", c.seed);
  }
  return "?";
}

// "forward", "random:3", "forward+interleave:1".
std::string schedule_name(const Config& c) {
  return c.interleave ? fmt::format("{}+interleave:{}", order_name(c), c.seed) : order_name(c);
}

bool same_schedule(const Config& a, const Config& b) {
  return a.order == b.order && a.interleave == b.interleave &&
         (a.seed == b.seed || (a.order != Order::random && !a.interleave));
}

// The `n` schedules after `primary`. For a kernel with access hooks (`hooked`) first the primary's
// order interleaved at memory operations (Config::interleave), seeded after it: the only one that
// can make a lost update (between threads of a block, or between blocks) show as a value. Then
// forward, reverse, and random ones seeded after it, none interleaved.
std::vector<Config> other_schedules(const Config& primary, unsigned n, bool hooked) {
  std::vector<Config> out;
  Config c = primary;
  c.race_schedules = 0;
  c.racecheck = false;  // the first run checked for hazards already
  if (hooked && !primary.interleave && n != 0) {
    c.interleave = true;
    c.seed = primary.seed + 1;
    out.push_back(c);
    c.seed = primary.seed;
  }
  c.interleave = false;
  for (Order o : {Order::forward, Order::reverse}) {
    c.order = o;
    if (out.size() < n && !same_schedule(c, primary)) out.push_back(c);
  }
  c.order = Order::random;
  for (std::uint64_t s = primary.seed + 1; out.size() < n; ++s) {
    c.seed = s;
    if (!same_schedule(c, primary)) out.push_back(c);
  }
  return out;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  const float sub = std::ldexp(static_cast<float>(man), -24);
  return sign ? -sub : sub;
}

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::f32: return "float";
    case Elem::f64: return "double";
    case Elem::f16: return "__half";
    case Elem::bf16: return "__nv_bfloat16";
    case Elem::i8: return "int8";
    case Elem::u8: return "uint8";
    case Elem::i16: return "int16";
    case Elem::u16: return "uint16";
    case Elem::i32: return "int";
    case Elem::u32: return "unsigned";
    case Elem::i64: return "int64";
    case Elem::u64: return "uint64";
    case Elem::bytes: break;
  }
  return "byte";
}

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string value_text(Elem e, const unsigned char* p) {
  switch (e) {
    case Elem::f32: return fmt::format("{}", load<float>(p));
    case Elem::f64: return fmt::format("{}", load<double>(p));
    case Elem::f16: return fmt::format("{}", half_to_float(load<std::uint16_t>(p)));
    case Elem::bf16:
      return fmt::format("{}", std::bit_cast<float>(std::uint32_t(load<std::uint16_t>(p)) << 16));
    case Elem::i8: return fmt::format("{}", load<std::int8_t>(p));
    case Elem::u8: return fmt::format("{}", load<std::uint8_t>(p));
    case Elem::i16: return fmt::format("{}", load<std::int16_t>(p));
    case Elem::u16: return fmt::format("{}", load<std::uint16_t>(p));
    case Elem::i32: return fmt::format("{}", load<std::int32_t>(p));
    case Elem::u32: return fmt::format("{}", load<std::uint32_t>(p));
    case Elem::i64: return fmt::format("{}", load<std::int64_t>(p));
    case Elem::u64: return fmt::format("{}", load<std::uint64_t>(p));
    case Elem::bytes: break;
  }
  return fmt::format("{:#04x}", *p);
}

struct Region {
  Allocation alloc;
  std::vector<unsigned char> before, after;  // at launch, and as the first schedule left it
};

// Where the first differing byte of `r` lies, named by the pointer argument closest below it.
std::string describe_difference(const LaunchDesc& d, const Region& r, std::size_t offset,
                                const unsigned char* rerun, const Config& a, const Config& b) {
  const unsigned char* addr = r.alloc.base + offset;
  const PtrArg* best = nullptr;
  for (std::size_t i = 0; i < d.n_ptr_args; ++i) {
    const PtrArg& p = d.ptr_args[i];
    const auto* ptr = static_cast<const unsigned char*>(p.ptr);
    if (ptr == nullptr || ptr > addr || ptr < r.alloc.base) continue;
    if (best == nullptr || ptr > static_cast<const unsigned char*>(best->ptr)) best = &p;
  }
  const auto* from = best ? static_cast<const unsigned char*>(best->ptr) : r.alloc.base;
  const std::size_t size = best ? best->elem_size : 1;
  const std::size_t elem = static_cast<std::size_t>(addr - from) / size;
  const std::size_t at = static_cast<std::size_t>(from - r.alloc.base) + elem * size;
  const Elem kind = best && at + size <= r.alloc.bytes ? best->elem : Elem::bytes;
  const std::size_t shown = kind == Elem::bytes ? offset : at;
  return fmt::format("{}: output differs between schedules {} and {}: argument {} ({}*) element {}: {} vs {}",
                     kernel_name(d.kernel), schedule_name(a), schedule_name(b),
                     best ? std::to_string(best->index) : std::string("?"),
                     elem_name(best ? best->elem : Elem::bytes), kind == Elem::bytes ? offset : elem,
                     value_text(kind, r.after.data() + shown), value_text(kind, rerun + shown));
}

}  // namespace

void report_race(const LaunchDesc& d, const std::string& message) {
  const RaceSink* s = g_race_sink.load(std::memory_order_acquire);
  if (s == nullptr) throw KernelError(message);
  const simt_race_info info{kernel_name(d.kernel).c_str(), message.c_str()};
  s->fn(&info, s->user);
}

double run_race_checked(const LaunchDesc& d, const Config& cfg, GridRunner run_grid) {
  std::vector<Region> regions;
  std::set<unsigned char*> seen;
  for (std::size_t i = 0; i < d.n_ptr_args; ++i) {
    const PtrArg& p = d.ptr_args[i];
    if (p.ptr == nullptr || !p.writable) continue;  // what a kernel only reads needs no restoring
    const auto a = allocation_of(p.ptr);
    if (!a) {
      std::fprintf(stderr, "simt: race check skipped for %s: argument %u is not simt::malloc memory\n",
                   kernel_name(d.kernel).c_str(), static_cast<unsigned>(p.index));
      const auto t0 = std::chrono::steady_clock::now();
      run_grid(d, cfg);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (seen.insert(a->base).second) regions.push_back({*a, {a->base, a->base + a->bytes}, {}});
  }
  const auto t0 = std::chrono::steady_clock::now();
  run_grid(d, cfg);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (Region& r : regions) r.after.assign(r.alloc.base, r.alloc.base + r.alloc.bytes);

  std::string finding;
  for (const Config& other : other_schedules(cfg, cfg.race_schedules, d.access_hooks)) {
    for (Region& r : regions) std::memcpy(r.alloc.base, r.before.data(), r.alloc.bytes);
    try {
      run_grid(d, other);
    } catch (const KernelError& e) {
      finding = fmt::format("{}: fails under schedule {} but not under {}: {}", kernel_name(d.kernel),
                            schedule_name(other), schedule_name(cfg), e.what());
    }
    for (const Region& r : regions) {
      if (!finding.empty()) break;
      if (std::memcmp(r.alloc.base, r.after.data(), r.alloc.bytes) == 0) continue;
      std::size_t off = 0;
      while (r.alloc.base[off] == r.after[off]) ++off;
      finding = describe_difference(d, r, off, r.alloc.base, cfg, other);
    }
    if (!finding.empty()) break;
  }
  for (Region& r : regions) std::memcpy(r.alloc.base, r.after.data(), r.alloc.bytes);
  if (!finding.empty()) report_race(d, finding);
  return seconds;
}

}  // namespace simt::detail

extern "C" void driftscope_simt_set_race_sink(simt_race_sink sink, void* user) {
  // As with the launch sink: a replaced sink may still be read by a concurrent launch, so none is
  // ever freed.
  static std::mutex m;
  static std::deque<simt::detail::RaceSink> installed;
  const simt::detail::RaceSink* s = nullptr;
  if (sink != nullptr) {
    std::lock_guard lock(m);
    s = &installed.emplace_back(simt::detail::RaceSink{sink, user});
  }
  simt::detail::g_race_sink.store(s, std::memory_order_release);
}
