// Stack switching for the fibers of the scheduler (runtime.cpp, fiber_sched.h).
#pragma once

#include <cstddef>

#include "simt/fiber_hop.h"

namespace simt::detail {

// Prepares the fresh stack below `top` (16-byte aligned, `size` bytes usable) so that the first
// fiber_switch to the returned context calls `entry(data)`, `data` being the address that switch
// loaded the context from.
// `entry` must never return.
void* fiber_stack_init(void* top, std::size_t size, void (*entry)(void* data));

#if defined(__x86_64__) && defined(__ELF__)

// Saves the calling context in `*save` and resumes the context held in `*to`; returns `save` when
// some fiber switches back to it (fiber_hop.h says why). The switch itself is simt/fiber_hop.h's,
// the one kernel code inlines: both sides of every switch must agree on what a context is.
[[gnu::always_inline]] inline void* fiber_switch(void** save, void** to) { return fiber_hop(save, to); }

#else

// Saves the calling context in `*save` and resumes the context held in `*to`; returns `save` when
// some fiber switches back to it, as the x86-64 switch does.
void* fiber_switch(void** save, void** to);

#endif

}  // namespace simt::detail
