// The memory checker of kernels built with access hooks (Config::memcheck on a kernel library built
// by driftscope_add_simt_kernel(... CHECKED)), the CPU counterpart of compute-sanitizer's memcheck.
//
// Under Config::memcheck simt::malloc hands out guarded blocks: 256-aligned, with red zones before
// and after (real memory the runtime owns) whose shadow bytes (access_shadow.h's kShadowOffset)
// are poisoned, so the instrumented code calls a hook at any access to them. simt::free puts a
// guarded block in a bounded quarantine, its shadow poisoned and its memory not reused until the
// quarantine is full, so a later access is a use after free; freeing it again, or freeing a pointer
// never handed out, is a finding instead of glibc's abort. A block's own bytes carry the shadow
// value 8, which no real AddressSanitizer uses: an access of 1, 2 or 4 bytes inside one 8-byte
// granule passes the inline check, an 8- or 16-byte access or one that straddles a granule calls
// the hook, which checks its alignment (a GPU faults on a float4 at an address not a multiple of
// 16). A new block's bytes start unwritten (kShadowUnwritten), so every access to them calls the
// hook: a store marks its bytes written (a granule all written takes kShadowOwned and the inline
// path again), and a kernel's load of a byte nothing wrote is an uninitialised read (initcheck).
// The runtime's copies and memsets mark what they write (note_written); instrumented host code (a
// cuBLAS call's output, a loop on the host) marks through the same hook. The block's dynamic
// shared memory gets red zones the same way, and so does each static
// __shared__ array (the CHECKED rewrite declares it between two). A launch's first bad access
// stops it before the access lands (the thread is abandoned, as a diagnostic abandons it), and a
// fault of the kernel (a null or wild pointer) is caught by a signal handler on an alternate stack
// and stops it the same way; the launch then returns, its findings worded for the launch record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "simt/simt_cpu.h"

namespace simt::detail {

// Shadow bytes of memcheck's memory: a block's own bytes (partial last granule: its byte count),
// red zones of device memory and of dynamic shared memory, and a freed block's bytes.
constexpr unsigned char kShadowOwned = 8;
constexpr unsigned char kShadowRedZone = 0xFA;
constexpr unsigned char kShadowSharedRedZone = 0xF2;
constexpr unsigned char kShadowFreed = 0xFD;
// A granule of a guarded block no store has completed yet: kShadowUnwritten plus how many of its
// bytes are the block's (8, or fewer in a partial last granule). Its written bytes, while only
// some are, are kept apart (memcheck_blocks.cpp).
constexpr unsigned char kShadowUnwritten = 0xE0;
constexpr bool unwritten_shadow(unsigned char s) { return (s & 0xF0) == kShadowUnwritten && (s & 0x0F) != 0; }
// The race checker's and the interleaver's mark (access_shadow.cpp, interleave.cpp).
constexpr unsigned char kShadowWatched = 0xF8;

// Set by __asan_init once the shadow is mapped (access_hooks.cpp): only a process with checked
// kernels has one, and only then are blocks guarded.
extern std::atomic<bool> g_shadow_mapped;
// True while a memcheck launch runs: the hooks then check every access they see.
extern std::atomic<bool> g_memcheck_launch;
// Guarded blocks live (handed out, not yet freed): while there are any, the hooks mark the stores
// of instrumented host code too, and copies and memsets mark what they write. A later launch of a
// process whose memcheck blocks are all freed pays nothing for them.
extern std::atomic<std::size_t> g_memcheck_live_blocks;

// A guarded block of `bytes` (simt::malloc under Config::memcheck with a shadow mapped), asked for
// at `file`:`line` (static storage), which its findings name.
void* guarded_malloc(std::size_t bytes, const char* file, unsigned line);
// Frees `p` if memcheck knows it (a guarded block: quarantined; freed twice: a finding) and returns
// true; false for a pointer it never handed out, which with `never_allocated_is_finding` (memcheck
// on, and no plain block starts at `p`) is a finding instead (and true: nothing is freed).
// `by_reset`: cudaDeviceReset frees it, which a later use of it says.
bool guarded_free(void* p, bool never_allocated_is_finding, bool by_reset = false,
                  const std::source_location* where = nullptr);
// Sets the shadow of [lo, hi) back to what memcheck gave it, after a checker that marked it for
// its own hooks (kShadowWatched) stops watching.
void restore_guarded_shadow(const unsigned char* lo, const unsigned char* hi);
// Red zones around a buffer of dynamic shared memory: the buffer (`bytes`, as launched) inside a
// larger allocation that the caller frees with free_guarded_shared.
unsigned char* guarded_shared(std::size_t bytes);
void free_guarded_shared(unsigned char* p, std::size_t bytes);
// Re-poisons the red zones of `p` (from guarded_shared), for a block that starts.
void poison_guarded_shared(unsigned char* p, std::size_t bytes);

// A static __shared__ array of a checked kernel reached under memcheck: its red zones
// (simt_cpu.h kStaticSharedRedZone) are poisoned the first time.
void memcheck_static_shared(void* p, std::size_t bytes);

// A launch of a kernel with access hooks under Config::memcheck: from begin to end the hooks check
// and a fault of the kernel is a finding (the handlers are installed for that time only).
void memcheck_begin_launch(const LaunchDesc& d);
// The findings of the launch, worded ("memcheck: ..."); `stopped`: one of them stopped it (every
// kind but an uninitialised read, after which it goes on).
std::vector<std::string> memcheck_end_launch(bool* stopped);
// An access of instrumented code during a memcheck launch (access_hooks.cpp). Returns true when
// the race checker or the interleaver watches its memory too (they then take the access).
bool memcheck_access(const void* p, std::size_t bytes, bool write, const void* pc);
// Marks [lo, hi) written where it lies in guarded blocks' unwritten granules (a store, a copy, a
// memset); nothing elsewhere.
void note_written(std::uintptr_t lo, std::uintptr_t hi);
// The first byte of [lo, hi) in a guarded block that nothing wrote, or 0.
std::uintptr_t first_unwritten(std::uintptr_t lo, std::uintptr_t hi);
// Counts every live guarded block as written: a launch memcheck cannot see (a kernel built without
// the CHECKED flavour) may have written any of them.
void assume_all_written();

// Findings of the host side (a double free, a free of a pointer never allocated) since the last
// call, worded as the launch's.
std::vector<std::string> take_host_memory_findings();

}  // namespace simt::detail
