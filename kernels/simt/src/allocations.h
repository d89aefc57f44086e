// Every live simt::malloc block, so a launch's pointer arguments can be traced back to the
// whole allocation they point into (race checking snapshots and restores those).
#pragma once

#include <cstddef>
#include <optional>

namespace simt::detail {

struct Allocation {
  unsigned char* base;
  std::size_t bytes;
};

void note_allocation(void* base, std::size_t bytes);
void forget_allocation(void* base);
// The live allocation holding `p`, if any.
std::optional<Allocation> allocation_of(const void* p);
// Fills [p, p + bytes) with Config::poison's pattern (simt_common.h poison_word).
void fill_poison(void* p, std::size_t bytes, unsigned pattern);

}  // namespace simt::detail
