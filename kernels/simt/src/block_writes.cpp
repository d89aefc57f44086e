#include "block_writes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "allocations.h"

namespace simt::detail {

namespace {

constexpr std::size_t kKept = 3;  // races worded per launch; the rest are counted

std::string block_name(const LaunchDesc& d, std::uint64_t b) {
  return fmt::format("({},{},{})", b % d.grid.x, (b / d.grid.x) % d.grid.y,
                     b / (std::uint64_t(d.grid.x) * d.grid.y));
}

}  // namespace

BlockWrites::BlockWrites(const LaunchDesc& d) : d_(d) {
  for (const auto& [alloc, arg] : argument_allocations(d, false)) {
    Watched w{alloc.base,
              alloc.bytes,
              std::vector<unsigned char>(alloc.base, alloc.base + alloc.bytes),
              std::vector<std::int64_t>(alloc.bytes, -1),
              std::vector<bool>(alloc.bytes, true),
              arg};
    watched_.push_back(std::move(w));
  }
}

bool BlockWrites::touched_atomically(std::uintptr_t addr) const {
  return std::any_of(atomics.begin(), atomics.end(),
                     [&](const auto& a) { return addr >= a.first && addr < a.first + a.second; });
}

void BlockWrites::after_block(std::uint64_t b) {
  for (Watched& w : watched_) {
    if (std::memcmp(w.before.data(), w.base, w.bytes) == 0) continue;
    for (std::size_t i = 0; i < w.bytes; ++i) {
      if (w.before[i] == w.base[i]) continue;
      w.before[i] = w.base[i];
      const bool atomic = touched_atomically(reinterpret_cast<std::uintptr_t>(w.base + i));
      const std::int64_t prev = w.owner[i];
      const bool race = prev >= 0 && std::uint64_t(prev) != b && !(w.atomic_only[i] && atomic);
      w.atomic_only[i] = (prev < 0 || w.atomic_only[i]) && atomic;
      w.owner[i] = std::int64_t(b);
      if (!race) continue;
      if (found_.size() >= kKept) {
        ++more_;
        continue;
      }
      // The element of the argument the byte belongs to, as the kernel indexes it.
      const auto* arg_base = static_cast<const unsigned char*>(w.arg->ptr);
      const std::ptrdiff_t off = reinterpret_cast<const unsigned char*>(w.base + i) - arg_base;
      const std::string elem = off >= 0 ? fmt::format("element {}", off / std::ptrdiff_t(w.arg->elem_size))
                                        : fmt::format("byte {} of its allocation", i);
      found_.push_back(
          fmt::format("WAW between blocks: blocks {} and {} both write {} of argument #{} without an atomic "
                      "(a lost update where they run at once)",
                      block_name(d_, std::uint64_t(prev)), block_name(d_, b), elem, w.arg->index));
      // One report per element: skip the rest of its bytes.
      const std::size_t rest = off >= 0 ? w.arg->elem_size - std::size_t(off) % w.arg->elem_size : 1;
      const std::size_t elem_end = std::min(w.bytes, i + rest);
      for (std::size_t j = i + 1; j < elem_end; ++j) {
        w.before[j] = w.base[j];
        w.owner[j] = std::int64_t(b);
      }
      i = elem_end - 1;
    }
  }
  atomics.clear();
}

std::vector<std::string> BlockWrites::take() {
  std::vector<std::string> out = std::move(found_);
  if (more_ > 0) out.push_back(fmt::format("{} more write-write race(s) between blocks", more_));
  found_.clear();
  more_ = 0;
  return out;
}

}  // namespace simt::detail
