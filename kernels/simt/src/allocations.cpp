#include "allocations.h"

#include <cstdint>
#include <map>
#include <mutex>

namespace simt::detail {
namespace {

std::mutex g_mutex;
std::map<std::uintptr_t, std::size_t>& table() {
  static auto* t = new std::map<std::uintptr_t, std::size_t>();  // outlives every static DeviceBuffer
  return *t;
}

}  // namespace

void note_allocation(void* base, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  table()[reinterpret_cast<std::uintptr_t>(base)] = bytes;
}

void forget_allocation(void* base) {
  std::lock_guard lock(g_mutex);
  table().erase(reinterpret_cast<std::uintptr_t>(base));
}

std::optional<Allocation> allocation_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(g_mutex);
  auto it = table().upper_bound(a);
  if (it == table().begin()) return std::nullopt;
  --it;
  if (a >= it->first + it->second && a != it->first) return std::nullopt;
  return Allocation{reinterpret_cast<unsigned char*>(it->first), it->second};
}

}  // namespace simt::detail
