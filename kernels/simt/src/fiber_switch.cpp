// Why not Boost.Context's jump_fcontext on x86-64: it leaves one entry on the CPU's return-stack
// predictor that no `ret` pops, and its resumed side returns through frames the predictor filled
// from another fiber's calls; every fiber runs the same kernel code, so after a switch each `ret`
// up the resumed fiber's frames could be predicted from the wrong entry. The x86-64 switch
// (simt/fiber_hop.h, inlined into the runtime and into kernel code) crosses no call or return at
// all (why, there). It also skips saving MXCSR and the x87 control word: kernels never change
// rounding modes, and the SysV ABI keeps them fixed across calls. This file holds what a fresh
// stack starts in. Other targets keep Boost.Context.
#include "fiber_switch.h"

#include <cstdint>

#if defined(__x86_64__) && defined(__ELF__)

extern "C" void simt_fiber_start_x64();

// A fresh stack holds the address of simt_fiber_start_x64, which the switch pops and jumps to, and
// the entry above it; the entry gets the switch's data (in rax) as its argument.
asm(R"(
  .text
  .p2align 4
  .globl simt_fiber_start_x64
  .hidden simt_fiber_start_x64
  .type simt_fiber_start_x64, @function
simt_fiber_start_x64:
  .cfi_startproc
  .cfi_undefined rip
  movq %rax, %rdi
  movq (%rsp), %rax
  andq $-16, %rsp
  call *%rax
  ud2
  .cfi_endproc
  .size simt_fiber_start_x64, .-simt_fiber_start_x64
)");

namespace simt::detail {

void* fiber_stack_init(void* top, std::size_t /*size*/, void (*entry)(void* data)) {
  // The switch pops sp[0] and jumps there; the start code reads the entry at sp[1] and aligns rsp down to
  // t - 32 before its `call`, so the entry sees the ABI's rsp % 16 == 8.
  auto* t = reinterpret_cast<std::uintptr_t*>(reinterpret_cast<std::uintptr_t>(top) & ~std::uintptr_t{15});
  std::uintptr_t* sp = t - 4;
  sp[0] = reinterpret_cast<std::uintptr_t>(&simt_fiber_start_x64);
  sp[1] = reinterpret_cast<std::uintptr_t>(entry);
  sp[2] = 0;
  sp[3] = 0;
  return sp;
}

}  // namespace simt::detail

#else

#include <boost/context/detail/fcontext.hpp>

#include <atomic>

namespace bctx = boost::context::detail;

namespace simt::detail {
namespace {

// What a switch hands over: fcontext gives the resumed side the switcher's context, to be stored
// where the switcher asked.
struct Hop {
  void** save;
  void* data;
};

std::atomic<void (*)(void*)> g_entry{nullptr};  // one entry for every fiber (runtime.cpp's)

void trampoline(bctx::transfer_t t) {
  auto* h = static_cast<Hop*>(t.data);
  *h->save = t.fctx;
  g_entry.load(std::memory_order_relaxed)(h->data);
}

}  // namespace

void* fiber_stack_init(void* top, std::size_t size, void (*entry)(void* data)) {
  g_entry.store(entry, std::memory_order_relaxed);
  return bctx::make_fcontext(top, size, &trampoline);
}

void* fiber_switch(void** save, void** to) {
  Hop h{save, to};
  const bctx::transfer_t t = bctx::jump_fcontext(*to, &h);
  auto* back = static_cast<Hop*>(t.data);
  *back->save = t.fctx;
  return back->data;
}

}  // namespace simt::detail

#endif
