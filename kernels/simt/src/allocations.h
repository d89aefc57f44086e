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

// Asks for transparent huge pages over the whole 2 MiB pages inside a block of 4 MiB or more,
// before anything touches it. A GPU maps device memory in large pages; in 4 KiB pages a kernel
// that gives each warp a row of a large matrix meets a new page, and a TLB miss that the hardware
// prefetcher does not cross, at nearly every row. Where the system is set to grant huge pages only
// on request (transparent_hugepage "madvise") this is what gets them.
void advise_huge_pages(void* p, std::size_t bytes);
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
