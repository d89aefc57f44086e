#include "memcheck_blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <utility>

#include "access_shadow.h"
#include "memcheck.h"
#include "simt/simt_cpu.h"

namespace simt::detail {

std::atomic<bool> g_shadow_mapped{false};
std::atomic<std::size_t> g_memcheck_live_blocks{0};

namespace {

// cudaMalloc's alignment, kept so a kernel that relies on it behaves as on a GPU.
constexpr std::size_t kAlign = 256;
// Red zones grow with the block (a flat grid's overrun grows with it), between these bounds.
constexpr std::size_t kMinRedZone = 256;
constexpr std::size_t kMaxRedZone = std::size_t{1} << 20;
// Freed blocks kept poisoned before their memory goes back to the C library: enough for the
// buffers of a few steps of a small model, bounded so a long run does not hold all it ever freed.
constexpr std::size_t kQuarantineBytes = std::size_t{256} << 20;
constexpr std::size_t kSharedRedZone = 256;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

struct Guarded {
  std::size_t bytes;     // asked for
  std::size_t red_zone;  // before the block; after it, red_zone plus the rounding up to kAlign
  const char* file;      // where it was asked for (static storage), or null
  unsigned line;
  bool may_be_unwritten = true;  // until assume_all_written counts it all as written
};

std::size_t span_of(const Guarded& g) { return g.red_zone + round_up(g.bytes, kAlign) + g.red_zone; }

unsigned char* shadow_of(std::uintptr_t a) {
  return reinterpret_cast<unsigned char*>((a >> 3) + kShadowOffset);
}

void fill_shadow(std::uintptr_t lo, std::uintptr_t hi, unsigned char v) {
  if (hi > lo) std::memset(shadow_of(lo), v, ((hi - lo) + 7) / 8);
}

// A block's own bytes: kShadowOwned for whole granules, the byte count for a partial last one.
void own_shadow(std::uintptr_t base, std::size_t bytes) {
  fill_shadow(base, base + bytes / 8 * 8, kShadowOwned);
  if (bytes % 8 != 0) *shadow_of(base + bytes / 8 * 8) = static_cast<unsigned char>(bytes % 8);
}

// A new block's bytes: kShadowUnwritten plus the granule's byte count.
void unwritten_shadow_of(std::uintptr_t base, std::size_t bytes) {
  fill_shadow(base, base + bytes / 8 * 8, kShadowUnwritten + 8);
  if (bytes % 8 != 0)
    *shadow_of(base + bytes / 8 * 8) = static_cast<unsigned char>(kShadowUnwritten + bytes % 8);
}

struct Freed {
  std::uintptr_t base;
  Guarded g;
  bool by_reset = false;  // freed by cudaDeviceReset, not by a free of its own
};

std::mutex g_mutex;
std::map<std::uintptr_t, Guarded>& live() {
  static auto* m = new std::map<std::uintptr_t, Guarded>();  // outlives every static DeviceBuffer
  return *m;
}
std::deque<Freed>& quarantine() {
  static auto* q = new std::deque<Freed>();
  return *q;
}
std::size_t g_quarantined = 0;
// The written bytes (a bit each) of unwritten granules some store reached only in part: granule
// address -> mask. Guarded by g_mutex.
std::map<std::uintptr_t, unsigned char>& partly_written() {
  static auto* m = new std::map<std::uintptr_t, unsigned char>();
  return *m;
}
void forget_partly_written(std::uintptr_t lo, std::uintptr_t hi) {
  auto& m = partly_written();
  if (!m.empty()) m.erase(m.lower_bound(lo), m.lower_bound(hi));
}
std::vector<std::string>& host_findings() {
  static auto* v = new std::vector<std::string>();
  return *v;
}
// The running block's dynamic shared memory (one checked launch at a time).
std::uintptr_t g_shared = 0;
std::size_t g_shared_bytes = 0;
// The static __shared__ arrays memcheck has poisoned the red zones of: address -> bytes.
std::map<std::uintptr_t, std::size_t>& statics() {
  static auto* m = new std::map<std::uintptr_t, std::size_t>();
  return *m;
}

void release(const Freed& f) {
  const std::uintptr_t raw = f.base - f.g.red_zone;
  fill_shadow(raw, raw + span_of(f.g), 0);
  std::free(reinterpret_cast<void*>(raw));
}

std::string allocated_at(const Guarded& g) {
  return g.file == nullptr ? std::string() : fmt::format("allocated at {}:{}", g.file, g.line);
}
std::string block_words(const Guarded& g) {
  return g.file == nullptr ? fmt::format("a {}-byte block", g.bytes)
                           : fmt::format("a {}-byte block {}", g.bytes, allocated_at(g));
}

// " at FILE:LINE" of the freeing call, where there is one.
std::string freed_at(const std::source_location* where) {
  return where == nullptr ? std::string() : fmt::format(" at {}:{}", where->file_name(), where->line());
}

// `addr` relative to [base, base + bytes) of `what`.
std::string relative(std::uintptr_t addr, std::uintptr_t base, std::size_t bytes, const std::string& what) {
  if (addr < base) return fmt::format("{} bytes before the start of {}", base - addr, what);
  if (addr >= base + bytes) return fmt::format("{} bytes past the end of {}", addr - (base + bytes), what);
  return fmt::format("byte {} of {}", addr - base, what);
}

}  // namespace

void* guarded_malloc(std::size_t bytes, const char* file, unsigned line) {
  const Guarded g{bytes, std::clamp(round_up(bytes / 4, kAlign), kMinRedZone, kMaxRedZone), file, line};
  void* raw = std::aligned_alloc(kAlign, span_of(g));
  if (raw == nullptr) throw std::bad_alloc();
  const auto lo = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t base = lo + g.red_zone;
  fill_shadow(lo, lo + span_of(g), kShadowRedZone);
  unwritten_shadow_of(base, bytes);
  std::lock_guard lock(g_mutex);
  live()[base] = g;
  g_memcheck_live_blocks.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<void*>(base);
}

bool guarded_free(void* p, bool never_allocated_is_finding, bool by_reset, const std::source_location* where) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(g_mutex);
  if (auto it = live().find(a); it != live().end()) {
    const Freed f{a, it->second, by_reset};
    live().erase(it);
    g_memcheck_live_blocks.fetch_sub(1, std::memory_order_relaxed);
    fill_shadow(a, a + round_up(f.g.bytes, kAlign), kShadowFreed);
    forget_partly_written(a, a + f.g.bytes);
    quarantine().push_back(f);
    g_quarantined += span_of(f.g);
    while (g_quarantined > kQuarantineBytes && quarantine().size() > 1) {
      g_quarantined -= span_of(quarantine().front().g);
      release(quarantine().front());
      quarantine().pop_front();
    }
    return true;
  }
  const auto freed =
      std::find_if(quarantine().begin(), quarantine().end(), [a](const Freed& f) { return f.base == a; });
  if (freed != quarantine().end()) {
    host_findings().push_back(
        fmt::format("memcheck: double free of {} (address {:#x}: cudaFree/simt::free{} of a block already freed)",
                    block_words(freed->g), a, freed_at(where)));
    return true;
  }
  if (!never_allocated_is_finding) return false;
  host_findings().push_back(fmt::format(
      "memcheck: free of a pointer never allocated ({:#x}: cudaFree/simt::free{} of no block cudaMalloc "
      "handed out)",
      a, freed_at(where)));
  return true;
}

void restore_guarded_shadow(const unsigned char* lo, const unsigned char* hi) {
  const auto a = reinterpret_cast<std::uintptr_t>(lo);
  std::lock_guard lock(g_mutex);
  if (auto it = live().find(a); it != live().end()) {
    // What the checker watched counts as written from here (its marks replaced the record).
    own_shadow(a, it->second.bytes);
    forget_partly_written(a, a + it->second.bytes);
    return;
  }
  if (a == g_shared && reinterpret_cast<std::uintptr_t>(hi) == a + g_shared_bytes)
    own_shadow(a, g_shared_bytes);
  if (auto it = statics().find(a); it != statics().end()) own_shadow(a, it->second);
}

void memcheck_static_shared(void* p, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(g_mutex);
  if (!statics().emplace(a, bytes).second) return;
  // The zone before ends at the array; the one after starts at its last byte's granule, whose
  // own bytes own_shadow then gives back.
  fill_shadow(a - kStaticSharedRedZone, a, kShadowSharedRedZone);
  fill_shadow(a + bytes / 8 * 8, a + bytes + kStaticSharedRedZone, kShadowSharedRedZone);
  own_shadow(a, bytes);
}

std::vector<std::string> take_host_memory_findings() {
  std::lock_guard lock(g_mutex);
  return std::exchange(host_findings(), {});
}

unsigned char* guarded_shared(std::size_t bytes) {
  void* raw = std::aligned_alloc(kAlign, kSharedRedZone + round_up(bytes, kAlign) + kSharedRedZone);
  if (raw == nullptr) throw std::bad_alloc();
  return static_cast<unsigned char*>(raw) + kSharedRedZone;
}

void free_guarded_shared(unsigned char* p, std::size_t bytes) {
  if (p == nullptr) return;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  // The C library hands the memory out again: to whatever gets it, its shadow must say nothing.
  fill_shadow(a - kSharedRedZone, a + round_up(bytes, kAlign) + kSharedRedZone, 0);
  {
    std::lock_guard lock(g_mutex);
    if (g_shared == a) {
      g_shared = 0;
      g_shared_bytes = 0;
    }
  }
  std::free(p - kSharedRedZone);
}

void poison_guarded_shared(unsigned char* p, std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  fill_shadow(a - kSharedRedZone, a + round_up(bytes, kAlign) + kSharedRedZone, kShadowSharedRedZone);
  own_shadow(a, bytes);
  std::lock_guard lock(g_mutex);
  g_shared = a;
  g_shared_bytes = bytes;
}

AddressPlace place_of(std::uintptr_t addr) {
  std::lock_guard lock(g_mutex);
  if (auto it = statics().upper_bound(addr + kStaticSharedRedZone); it != statics().begin()) {
    --it;
    if (addr + kStaticSharedRedZone >= it->first && addr < it->first + it->second + kStaticSharedRedZone) {
      const bool in = addr >= it->first && addr < it->first + it->second;
      return {in ? AddressKind::inside : AddressKind::out_of_bounds,
              relative(addr, it->first, it->second,
                       fmt::format("a {}-byte static __shared__ array", it->second))};
    }
  }
  if (g_shared != 0 && addr + kSharedRedZone >= g_shared &&
      addr < g_shared + round_up(g_shared_bytes, kAlign) + kSharedRedZone) {
    const bool in = addr >= g_shared && addr < g_shared + g_shared_bytes;
    return {
        in ? AddressKind::inside : AddressKind::out_of_bounds,
        relative(addr, g_shared, g_shared_bytes,
                 fmt::format("the block's dynamic shared memory ({} bytes, as launched)", g_shared_bytes))};
  }
  auto it = live().upper_bound(addr);
  // The block above `addr` may own it through its red zone before; the one below through its own
  // bytes or its red zone after.
  if (it != live().end() && addr + it->second.red_zone >= it->first)
    return {AddressKind::out_of_bounds, relative(addr, it->first, it->second.bytes, block_words(it->second))};
  if (it != live().begin()) {
    --it;
    const Guarded& g = it->second;
    if (addr < it->first + round_up(g.bytes, kAlign) + g.red_zone) {
      const bool in = addr < it->first + g.bytes;
      return {in ? AddressKind::inside : AddressKind::out_of_bounds,
              relative(addr, it->first, g.bytes, block_words(g))};
    }
  }
  for (const Freed& f : quarantine())
    if (addr >= f.base && addr < f.base + round_up(f.g.bytes, kAlign))
      return {AddressKind::freed,
              relative(addr, f.base, f.g.bytes,
                       fmt::format("a {}-byte block already freed{}{}", f.g.bytes,
                                   f.by_reset ? " by cudaDeviceReset" : "",
                                   f.g.file == nullptr ? "" : fmt::format(" ({})", allocated_at(f.g))))};
  // A wild address: how far it is from the nearest block below it says which index ran away.
  it = live().upper_bound(addr);
  if (it == live().begin()) return {AddressKind::unknown, {}};
  --it;
  return {AddressKind::unknown,
          fmt::format("in no allocation, {} (the nearest block below it)",
                      relative(addr, it->first, it->second.bytes, block_words(it->second)))};
}

void note_written(std::uintptr_t lo, std::uintptr_t hi) {
  if (g_memcheck_live_blocks.load(std::memory_order_relaxed) == 0 || hi <= lo) return;
  std::unique_lock lock(g_mutex, std::defer_lock);
  for (std::uintptr_t g = lo & ~std::uintptr_t{7}; g < hi; g += 8) {
    unsigned char* s = shadow_of(g);
    if (!unwritten_shadow(*s)) continue;
    const unsigned valid = *s & 0x0F;
    const unsigned b0 = static_cast<unsigned>(std::max(lo, g) - g);
    const unsigned b1 = std::min(static_cast<unsigned>(std::min(hi, g + 8) - g), valid);
    if (b0 >= b1) continue;
    const auto all = static_cast<unsigned char>((1u << valid) - 1);
    const auto mask = static_cast<unsigned char>(((1u << b1) - 1) & ~((1u << b0) - 1));
    if (!lock.owns_lock()) lock.lock();
    auto& partly = partly_written();
    unsigned char written = mask;
    if (auto it = partly.find(g); it != partly.end()) {
      written |= it->second;
      if (written == all)
        partly.erase(it);
      else
        it->second = written;
    } else if (written != all) {
      partly.emplace(g, written);
    }
    if (written == all) *s = valid == 8 ? kShadowOwned : static_cast<unsigned char>(valid);
  }
}

std::uintptr_t first_unwritten(std::uintptr_t lo, std::uintptr_t hi) {
  if (g_memcheck_live_blocks.load(std::memory_order_relaxed) == 0 || hi <= lo) return 0;
  std::lock_guard lock(g_mutex);
  for (std::uintptr_t g = lo & ~std::uintptr_t{7}; g < hi; g += 8) {
    const unsigned char s = *shadow_of(g);
    if (!unwritten_shadow(s)) continue;
    const unsigned b0 = static_cast<unsigned>(std::max(lo, g) - g);
    const unsigned b1 = std::min(static_cast<unsigned>(std::min(hi, g + 8) - g), unsigned{s & 0x0Fu});
    const auto it = partly_written().find(g);
    const unsigned written = it == partly_written().end() ? 0 : it->second;
    for (unsigned b = b0; b < b1; ++b)
      if ((written & (1u << b)) == 0) return g + b;
  }
  return 0;
}

void assume_all_written() {
  if (g_memcheck_live_blocks.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(g_mutex);
  for (auto& [base, g] : live())
    if (std::exchange(g.may_be_unwritten, false)) own_shadow(base, g.bytes);
  partly_written().clear();
}

}  // namespace simt::detail
