// Every live simt::malloc block, so a launch's pointer arguments can be traced back to the
// whole allocation they point into (race checking snapshots and restores those).
#pragma once

#include <cstddef>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
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
// `where`: the line that asked for the block; the block is filed under the step set last.
void note_allocation(void* base, std::size_t bytes, const std::source_location& where);
void forget_allocation(void* base);
// Every live block's start (cudaDeviceReset frees them all).
std::vector<void*> live_allocation_bases();
// The candidate step under way (driftscope_simt_begin_step): every block allocated until the next
// call is filed under it; "" (load(), between steps) files blocks under none.
void set_allocation_step(std::string_view step);
// Whether a candidate step is under way (a step name is set).
bool allocation_step_set();
// The live blocks allocated during a step, by step and the line that asked for them, one line each:
// "STEP\tFILE:LINE\tBLOCKS\tBYTES". A block a step allocates and frees before the next is gone.
std::vector<std::string> live_step_allocations();
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
