// The access hooks of the checked kernel flavour (driftscope_add_simt_kernel(... CHECKED)).
//
// Its translation units are compiled with AddressSanitizer's instrumentation (-fsanitize=address
// -fsanitize-recover=address, no stack or global redzones) and linked without the ASan runtime.
// The instrumentation puts an inline check before every load and store: one byte of a shadow
// (address / 8 + 0x7fff8000) is read and, when it is not zero, a report function is called. These
// definitions take the runtime's place: __asan_init maps the shadow (all zero: nothing is
// reported), the hazard checker (access_shadow.h) marks the shadow of the memory it watches
// during a checked launch, and the report functions hand those accesses to it. An access to
// memory nobody watches costs the inline check only; a watched one a call.
//
// This file is pulled from the static runtime library only by objects that call its functions,
// so a plain kernel library never links it, and no shadow is mapped for it. It cannot be linked
// together with the real ASan runtime (the CHECKED flavour is not built under a sanitizer preset).
#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "access_shadow.h"
#include "interleave.h"
#include "memcheck.h"

namespace {

[[gnu::always_inline]] inline void seen(const void* p, std::size_t n, bool write, const void* pc) {
  // Memcheck's launch, or a store of host code that marks a block's bytes written (memcheck.h).
  if (simt::detail::g_memcheck_launch.load(std::memory_order_relaxed) ||
      simt::detail::g_memcheck_live_blocks.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    if (!simt::detail::memcheck_access(p, n, write, pc)) return;  // memcheck's alone (memcheck.h)
  }
  if (simt::detail::AccessShadow* s = simt::detail::g_access_shadow.load(std::memory_order_relaxed))
      [[likely]] {
    if (!(write ? s->write_handled_inline(p, n, pc) : s->read_handled_inline(p, n, pc)))
      s->on_access(p, n, write, pc);
  } else if (simt::detail::Interleaver* i = simt::detail::g_interleaver.load(std::memory_order_relaxed))
    i->on_access(p, n, write, pc);  // Config::interleave (interleave.h)
}

// Whether /proc/self/maps lists an anonymous read-write mapping of exactly [lo, hi): the shadow
// another checked module of this process (a plugin with its own copy of the runtime) mapped.
bool mapped_as_shadow(std::uintptr_t lo, std::uintptr_t hi) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  char line[512];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long a = 0, b = 0, offset = 0, inode = 0;
    char perms[8] = {};
    char dev[16] = {};
    if (std::sscanf(line, "%llx-%llx %7s %llx %15s %llu", &a, &b, perms, &offset, dev, &inode) != 6) continue;
    found = a == lo && b == hi && perms[0] == 'r' && perms[1] == 'w' && inode == 0;
  }
  std::fclose(f);
  return found;
}

// Maps [lo, hi) of the shadow, or says why not and stops: instrumented code reads the shadow at
// every access, so it cannot run without it.
void map_shadow(std::uintptr_t lo, std::uintptr_t hi) {
  void* want = reinterpret_cast<void*>(lo);
  void* got = ::mmap(want, hi - lo, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == want) return;
  if (got == MAP_FAILED && errno == EEXIST && mapped_as_shadow(lo, hi)) return;
  std::fprintf(stderr,
               "simt: the checked kernel flavour cannot map its access shadow at [%#zx, %#zx): %s (it needs "
               "that address range free and memory overcommit, as AddressSanitizer does)\n",
               static_cast<std::size_t>(lo), static_cast<std::size_t>(hi),
               got == MAP_FAILED ? std::strerror(errno) : "the range is in use");
  std::_Exit(70);
}

}  // namespace

// Called from a constructor of every instrumented module, before any of its code runs. The
// ranges are AddressSanitizer's x86-64 Linux layout: the shadow of low and of high memory.
extern "C" void __asan_init() {
  static bool mapped = false;
  if (mapped) return;
  mapped = true;
  map_shadow(simt::detail::kShadowOffset, 0x8fff7000ull);
  map_shadow(0x02008fff7000ull, 0x10007fff8000ull);
  simt::detail::g_shadow_mapped.store(true, std::memory_order_relaxed);
}
extern "C" void __asan_version_mismatch_check_v8() {}
extern "C" void __asan_handle_no_return() {}
// GCC brackets a file's dynamic initialisers with these (ASan's initialisation-order check) even
// with asan-globals=0, so a kernel file with a namespace-scope object that has a constructor
// (<iostream>'s, a table built at start-up) needs them to link; the order is not checked here.
extern "C" void __asan_before_dynamic_init(const char*) {}
extern "C" void __asan_after_dynamic_init() {}

#define SIMT_PC __builtin_return_address(0)
#define SIMT_REPORT_HOOKS(n)                                                               \
  extern "C" void __asan_report_load##n##_noabort(void* p) { seen(p, n, false, SIMT_PC); } \
  extern "C" void __asan_report_store##n##_noabort(void* p) { seen(p, n, true, SIMT_PC); } \
  extern "C" void __asan_report_load##n(void* p) { seen(p, n, false, SIMT_PC); }           \
  extern "C" void __asan_report_store##n(void* p) { seen(p, n, true, SIMT_PC); }
SIMT_REPORT_HOOKS(1)
SIMT_REPORT_HOOKS(2)
SIMT_REPORT_HOOKS(4)
SIMT_REPORT_HOOKS(8)
SIMT_REPORT_HOOKS(16)
#undef SIMT_REPORT_HOOKS
extern "C" void __asan_report_load_n_noabort(void* p, std::size_t n) { seen(p, n, false, SIMT_PC); }
extern "C" void __asan_report_store_n_noabort(void* p, std::size_t n) { seen(p, n, true, SIMT_PC); }
extern "C" void __asan_report_load_n(void* p, std::size_t n) { seen(p, n, false, SIMT_PC); }
extern "C" void __asan_report_store_n(void* p, std::size_t n) { seen(p, n, true, SIMT_PC); }

// Clang's instrumentation calls these for memory intrinsics (GCC checks their ranges inline): the
// copy is the hook's to make.
extern "C" void* __asan_memcpy(void* d, const void* s, std::size_t n) {
  seen(s, n, false, SIMT_PC);
  seen(d, n, true, SIMT_PC);
  return std::memcpy(d, s, n);
}
extern "C" void* __asan_memmove(void* d, const void* s, std::size_t n) {
  seen(s, n, false, SIMT_PC);
  seen(d, n, true, SIMT_PC);
  return std::memmove(d, s, n);
}
extern "C" void* __asan_memset(void* d, int c, std::size_t n) {
  seen(d, n, true, SIMT_PC);
  return std::memset(d, c, n);
}
