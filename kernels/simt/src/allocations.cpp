#include "allocations.h"

#include "simt/simt_common.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include <sys/mman.h>

namespace simt::detail {
namespace {

struct Block {
  std::size_t bytes;
  const std::string* step;  // the step that allocated it (an interned name), or null
  const char* file;         // where it was asked for (std::source_location's, static storage)
  unsigned line;
};

std::mutex g_mutex;
std::map<std::uintptr_t, Block>& table() {
  static auto* t = new std::map<std::uintptr_t, Block>();  // outlives every static DeviceBuffer
  return *t;
}
// Every step name seen, so that a block holds a pointer to its step's name. Guarded by g_mutex.
std::set<std::string>& step_names() {
  static auto* s = new std::set<std::string>();
  return *s;
}
const std::string* g_step = nullptr;  // guarded by g_mutex

}  // namespace

void advise_huge_pages(void* p, std::size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHuge - 1);
  // Advice only: where the system refuses it, the memory works the same in small pages.
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

void note_allocation(void* base, std::size_t bytes, const std::source_location& where) {
  std::lock_guard lock(g_mutex);
  table()[reinterpret_cast<std::uintptr_t>(base)] = {bytes, g_step, where.file_name(), where.line()};
}

void set_allocation_step(std::string_view step) {
  std::lock_guard lock(g_mutex);
  g_step = step.empty() ? nullptr : &*step_names().emplace(step).first;
}

bool allocation_step_set() {
  std::lock_guard lock(g_mutex);
  return g_step != nullptr;
}

std::vector<std::string> live_step_allocations() {
  std::map<std::tuple<std::string, std::string, unsigned>, std::pair<std::uint64_t, std::uint64_t>> by_site;
  {
    std::lock_guard lock(g_mutex);
    for (const auto& [base, b] : table())
      if (b.step != nullptr) {
        auto& [blocks, bytes] = by_site[{*b.step, b.file, b.line}];
        ++blocks;
        bytes += b.bytes;
      }
  }
  std::vector<std::string> out;
  for (const auto& [key, n] : by_site)
    out.push_back(fmt::format("{}\t{}:{}\t{}\t{}", std::get<0>(key), std::get<1>(key), std::get<2>(key),
                              n.first, n.second));
  return out;
}

void forget_allocation(void* base) {
  std::lock_guard lock(g_mutex);
  table().erase(reinterpret_cast<std::uintptr_t>(base));
}

std::vector<void*> live_allocation_bases() {
  std::lock_guard lock(g_mutex);
  std::vector<void*> out;
  out.reserve(table().size());
  for (const auto& [base, block] : table()) out.push_back(reinterpret_cast<void*>(base));
  return out;
}

std::optional<Allocation> allocation_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(g_mutex);
  auto it = table().upper_bound(a);
  if (it == table().begin()) return std::nullopt;
  --it;
  if (a >= it->first + it->second.bytes && a != it->first) return std::nullopt;
  return Allocation{reinterpret_cast<unsigned char*>(it->first), it->second.bytes};
}

std::vector<ArgAllocation> argument_allocations(const LaunchDesc& d, bool read_only) {
  std::vector<ArgAllocation> out;
  for (const bool writable : {true, false}) {
    if (!writable && !read_only) break;
    for (std::size_t i = 0; i < d.n_ptr_args; ++i) {
      const PtrArg& a = d.ptr_args[i];
      if (a.writable != writable || a.ptr == nullptr) continue;
      const auto alloc = allocation_of(a.ptr);
      if (!alloc) continue;
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const ArgAllocation& o) { return o.alloc.base == alloc->base; });
      if (!seen) out.push_back({*alloc, &a});
    }
  }
  return out;
}

void fill_poison(void* p, std::size_t bytes, unsigned pattern) {
  if (bytes == 0) return;
  const std::uint16_t word = poison_word(pattern);
  const unsigned char lo = static_cast<unsigned char>(word & 0xFF),
                      hi = static_cast<unsigned char>(word >> 8);
  if (lo == hi) {
    std::memset(p, lo, bytes);
    return;
  }
  // Pairs from the start of the block: an allocation is at least 2-aligned, so every 16-bit view
  // of it reads the whole word.
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) b[i] = i % 2 == 0 ? lo : hi;
}

}  // namespace simt::detail
