// The access hooks of the checked kernel flavour (driftscope_add_simt_kernel(... CHECKED)): its
// translation units are compiled with -fsanitize=thread, which makes the compiler call
// __tsan_read4, __tsan_write8, __tsan_atomic32_fetch_add, ... at every load, store and atomic, and
// linked without the TSan runtime. These definitions take its place: each hands the access to the
// hazard checker of the running checked launch (access_shadow.h) and does nothing otherwise.
//
// This file is pulled from the static runtime library only by objects that call the hooks, so a
// plain kernel library never links it. It cannot be linked together with the real TSan runtime.
#include <cstddef>
#include <cstdint>

#include "access_shadow.h"

namespace {

using simt::detail::tl_access_shadow;

[[gnu::always_inline]] inline void seen(const void* p, std::size_t n, bool write, bool atomic,
                                        const void* pc) {
  if (simt::detail::AccessShadow* s = tl_access_shadow) [[unlikely]]
    s->on_access(p, n, write, atomic, pc);
}

}  // namespace

#define SIMT_PC __builtin_return_address(0)
#define SIMT_PLAIN_HOOKS(n)                                                                         \
  extern "C" void __tsan_read##n(void* p) { seen(p, n, false, false, SIMT_PC); }                    \
  extern "C" void __tsan_write##n(void* p) { seen(p, n, true, false, SIMT_PC); }                    \
  extern "C" void __tsan_unaligned_read##n(void* p) { seen(p, n, false, false, SIMT_PC); }          \
  extern "C" void __tsan_unaligned_write##n(void* p) { seen(p, n, true, false, SIMT_PC); }          \
  extern "C" void __tsan_volatile_read##n(void* p) { seen(p, n, false, false, SIMT_PC); }           \
  extern "C" void __tsan_volatile_write##n(void* p) { seen(p, n, true, false, SIMT_PC); }           \
  extern "C" void __tsan_unaligned_volatile_read##n(void* p) { seen(p, n, false, false, SIMT_PC); } \
  extern "C" void __tsan_unaligned_volatile_write##n(void* p) { seen(p, n, true, false, SIMT_PC); } \
  extern "C" void __tsan_read##n##_pc(void* p, void* pc) { seen(p, n, false, false, pc); }          \
  extern "C" void __tsan_write##n##_pc(void* p, void* pc) { seen(p, n, true, false, pc); }
SIMT_PLAIN_HOOKS(1)
SIMT_PLAIN_HOOKS(2)
SIMT_PLAIN_HOOKS(4)
SIMT_PLAIN_HOOKS(8)
SIMT_PLAIN_HOOKS(16)
#undef SIMT_PLAIN_HOOKS

extern "C" void __tsan_read_range(void* p, std::size_t n) { seen(p, n, false, false, SIMT_PC); }
extern "C" void __tsan_write_range(void* p, std::size_t n) { seen(p, n, true, false, SIMT_PC); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_ignore_thread_begin() {}
extern "C" void __tsan_ignore_thread_end() {}
extern "C" void __tsan_vptr_update(void** p, void*) { seen(p, sizeof(void*), true, false, SIMT_PC); }
extern "C" void __tsan_vptr_read(void** p) { seen(p, sizeof(void*), false, false, SIMT_PC); }

// Atomics: the operation itself, done here (the instrumented code no longer does it), and the
// access as an atomic one. `mo` is the C++ memory order as the instrumentation passes it
// (0 relaxed ... 5 seq_cst); the CPU's sequentially consistent order is stronger than any.
namespace {
constexpr int kSeqCst = __ATOMIC_SEQ_CST;
}  // namespace

#define SIMT_ATOMIC_HOOKS(bits, T)                                                                          \
  extern "C" T __tsan_atomic##bits##_load(const volatile T* a, int) {                                       \
    seen(const_cast<const T*>(a), sizeof(T), false, true, SIMT_PC);                                         \
    return __atomic_load_n(a, kSeqCst);                                                                     \
  }                                                                                                         \
  extern "C" void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                    \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    __atomic_store_n(a, v, kSeqCst);                                                                        \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                                    \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_exchange_n(a, v, kSeqCst);                                                              \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                                   \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_add(a, v, kSeqCst);                                                               \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                                   \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_sub(a, v, kSeqCst);                                                               \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                                   \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_and(a, v, kSeqCst);                                                               \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                                    \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_or(a, v, kSeqCst);                                                                \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                                   \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_xor(a, v, kSeqCst);                                                               \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int) {                                  \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_fetch_nand(a, v, kSeqCst);                                                              \
  }                                                                                                         \
  extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v, int, int) { \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_compare_exchange_n(a, expected, v, false, kSeqCst, kSeqCst);                            \
  }                                                                                                         \
  extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v, int, int) {   \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    return __atomic_compare_exchange_n(a, expected, v, false, kSeqCst, kSeqCst);                            \
  }                                                                                                         \
  extern "C" T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int, int) {       \
    seen(const_cast<const T*>(a), sizeof(T), true, true, SIMT_PC);                                          \
    __atomic_compare_exchange_n(a, &expected, v, false, kSeqCst, kSeqCst);                                  \
    return expected;                                                                                        \
  }
SIMT_ATOMIC_HOOKS(8, std::uint8_t)
SIMT_ATOMIC_HOOKS(16, std::uint16_t)
SIMT_ATOMIC_HOOKS(32, std::uint32_t)
SIMT_ATOMIC_HOOKS(64, std::uint64_t)
#undef SIMT_ATOMIC_HOOKS

extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(kSeqCst); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(kSeqCst); }

// Clang's instrumentation calls these for memory intrinsics; the copy is the hook's to make.
extern "C" void* __tsan_memcpy(void* d, const void* s, std::size_t n) {
  seen(s, n, false, false, SIMT_PC);
  seen(d, n, true, false, SIMT_PC);
  return __builtin_memcpy(d, s, n);
}
extern "C" void* __tsan_memmove(void* d, const void* s, std::size_t n) {
  seen(s, n, false, false, SIMT_PC);
  seen(d, n, true, false, SIMT_PC);
  return __builtin_memmove(d, s, n);
}
extern "C" void* __tsan_memset(void* d, int c, std::size_t n) {
  seen(d, n, true, false, SIMT_PC);
  return __builtin_memset(d, c, n);
}
