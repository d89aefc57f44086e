// Stack switching for the fibers of the scheduler (runtime.cpp, fiber_sched.h).
#pragma once

#include <cstddef>

namespace simt::detail {

// Prepares the fresh stack below `top` (16-byte aligned, `size` bytes usable) so that the first
// fiber_switch to the returned context calls `entry(data)`, `data` being that switch's argument.
// `entry` must never return.
void* fiber_stack_init(void* top, std::size_t size, void (*entry)(void* data));

// Saves the calling context in `*save` and resumes `to`; returns when some fiber switches back to
// `*save`, with the `data` that switch passed.
void* fiber_switch(void** save, void* to, void* data);

}  // namespace simt::detail
