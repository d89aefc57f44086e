// Every live simt::malloc block, so a launch's pointer arguments can be traced back to the
// whole allocation they point into (race checking snapshots and restores those).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "simt/simt_cpu.h"

namespace simt::detail {

struct Allocation {
  unsigned char* base;
  std::size_t bytes;
};

void note_allocation(void* base, std::size_t bytes);
void forget_allocation(void* base);
// The live allocation holding `p`, if any.
std::optional<Allocation> allocation_of(const void* p);
// An allocation a launch's pointer arguments point into, with the first such argument.
struct ArgAllocation {
  Allocation alloc;
  const PtrArg* arg;
};
// The distinct allocations the writable pointer arguments of `d` point into (what a launch may
// write: the checkers watch these), then, with `read_only`, those only read-only ones point into.
// Pointers into memory the runtime did not hand out are not among them.
std::vector<ArgAllocation> argument_allocations(const LaunchDesc& d, bool read_only);
// Fills [p, p + bytes) with Config::poison's pattern (simt_common.h poison_word).
void fill_poison(void* p, std::size_t bytes, unsigned pattern);

}  // namespace simt::detail
