// Stack switching for the fibers of the scheduler (runtime.cpp, fiber_sched.h).
#pragma once

#include <cstddef>

namespace simt::detail {

// Prepares the fresh stack below `top` (16-byte aligned, `size` bytes usable) so that the first
// fiber_switch to the returned context calls `entry(data)`, `data` being that switch's argument.
// `entry` must never return.
void* fiber_stack_init(void* top, std::size_t size, void (*entry)(void* data));

#if defined(__x86_64__) && defined(__ELF__)

// Saves the calling context in `*save` and resumes `to`; returns when some fiber switches back to
// `*save`, with the `data` that switch passed.
//
// Inline, and the context is the stack pointer alone: the asm tells the compiler that every
// register but rsp and rbp is overwritten, so the calling function keeps across the switch only
// the values it still needs, in its own frame, instead of a fixed set of six saved on every switch
// by an out-of-line one plus the prologue pushes of the function around it (docs/simt.md, "Speed").
// The switch is a `call` whose `ret` resumes the other fiber: the return-stack predictor is right
// whenever both fibers suspended at the same switch, as the lanes of one collective do. The red
// zone below rsp is stepped over first, as the `call` writes there.
[[gnu::always_inline]] inline void* fiber_switch(void** save, void* to, void* data) {
  asm volatile(
      "leaq -128(%%rsp), %%rsp\n\t"
      "pushq %%rbp\n\t"
      "call 1f\n\t"
      "jmp 2f\n"
      "1:\n\t"
      "movq %%rsp, (%[save])\n\t"
      "movq %[to], %%rsp\n\t"
      "ret\n"
      "2:\n\t"
      "popq %%rbp\n\t"
      "leaq 128(%%rsp), %%rsp"
      : "+a"(data), [save] "+D"(save), [to] "+S"(to)
      :
      : "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "xmm2",
        "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
        "xmm15",
#if defined(__AVX512F__)
        "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
        "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7",
#endif
        "memory", "cc");
  return data;
}

#else

// Saves the calling context in `*save` and resumes `to`; returns when some fiber switches back to
// `*save`, with the `data` that switch passed.
void* fiber_switch(void** save, void* to, void* data);

#endif

}  // namespace simt::detail
