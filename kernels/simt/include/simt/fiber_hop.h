// The CPU backend's fiber switch, shared by the runtime and by kernel code: on x86-64 every
// collective and barrier switches lanes inline, at its own call site in the kernel
// (simt_cpu.h). Include simt/simt.h instead of this file.
#pragma once

// The inline path needs the x86-64 switch below, and none of ASan's fiber annotations, which
// only the runtime's own switch makes (src/fiber_sched.h tests the same macro). The checked
// flavour (SIMT_ACCESS_HOOKS) has ASan's instrumentation without its runtime: nothing to annotate.
#if defined(__x86_64__) && defined(__ELF__) && \
    (!defined(__SANITIZE_ADDRESS__) || (defined(SIMT_ACCESS_HOOKS) && SIMT_ACCESS_HOOKS))
#define SIMT_INLINE_SWITCH 1
#else
#define SIMT_INLINE_SWITCH 0
#endif

namespace simt::detail {

#if defined(__x86_64__) && defined(__ELF__)

// Saves the calling context in `*save` and resumes the context held in `*to`; returns when some
// fiber resumes `*save`, with `save` itself: every switch hands the resumed side the address it
// loaded the context from, that is the address where the resumed side saved it. A lane suspended
// at a collective saves its context in the first word of its LaneSlot (simt_cpu.h), where its
// result waits: so it reads the result through a register the switch set, without first loading
// its own slot's address from its stack, a load that could only start once the stack pointer
// itself was loaded, on every lane's path from its resumption to its next arrival.
//
// A context is a stack pointer whose top word is the address to resume at. The switch pushes its
// own resume address and jumps to the other's; no `call` or `ret` crosses it, so the CPU's
// return-stack predictor keeps the entries of the frames every fiber shares (fiber_main, the
// kernel's invoker) and the returns out of them stay predicted. The resuming `jmp` is predicted
// by the indirect-branch predictor from its last target: the lanes of a warp resume one after
// another at the same site, so every lane after the first is predicted, even when the switching
// lane already stands at the next collective (the return-based switch this replaced
// mispredicted there, once per frame).
// The asm tells the compiler that every register but rsp and rbp is overwritten: the calling
// function keeps across the switch only the values it still needs. The pushes write below rsp,
// where a leaf function may keep data (the red zone); no function that switches is a leaf (each
// calls the runtime's arrival first, or, in the runtime, its bookkeeping), and GCC and Clang use the
// red zone in leaf functions only, so the switch need not step over it.
[[gnu::always_inline]] inline void* fiber_hop(void** save, void** to) {
  void* data = to;
  asm volatile(
      "pushq %%rbp\n\t"
      "leaq 1f(%%rip), %%rcx\n\t"
      "pushq %%rcx\n\t"
      "movq %%rsp, (%[save])\n\t"
      "movq (%[to]), %%rsp\n\t"
      "popq %%rcx\n\t"
      "jmpq *%%rcx\n"
      "1:\n\t"
      "popq %%rbp"
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

#endif

}  // namespace simt::detail
