// CPU backend of the SIMT runtime: every CUDA thread is a fiber. Include
// simt/simt.h instead of this file.
#pragma once

// These must precede every CUDA toolkit header: crt/host_defines.h defines
// __shared__ (and friends) as nothing under a host compiler unless they already
// exist, which would silently give every thread its own "shared" array.
// One block runs at a time per OS thread, so thread_local is one copy per block
// in flight.
#ifndef __shared__
#define __shared__ static thread_local
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __constant__
#define __constant__
#endif
#ifndef __managed__
#define __managed__
#endif
#ifndef __grid_constant__
#define __grid_constant__
#endif

#include <vector_types.h>
#include <vector_functions.h>

// crt/host_defines.h defines these for nvcc only; on the CPU they mean nothing.
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __cluster_dims__
#define __cluster_dims__(...)
#endif
#ifndef __maxnreg__
#define __maxnreg__(...)
#endif

// Every kernel file parses these headers, twice in a build with its checked flavour: they include
// only what they use. <algorithm>, <memory> and <chrono> were a third of the compile time of a
// small kernel (docs/build.md).
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <math.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "simt/fiber_hop.h"
#include "simt/simt_common.h"

// A translation unit compiled with access hooks (the CHECKED flavour of driftscope_add_simt_kernel
// defines SIMT_ACCESS_HOOKS=1): its launches tell the runtime so, and the hazard checker then sees
// the kernel's accesses through the hooks instead of page faults.
#ifndef SIMT_ACCESS_HOOKS
#define SIMT_ACCESS_HOOKS 0
#endif
// On code a kernel's translation unit compiles that touches no memory of the kernel's: a fused
// shuffle loop's step function (shfl_fold), which reads and writes the lanes' slots, and the loop's
// body, a function of two values (the rewrite step's shuffle_loop.cpp). The access hooks'
// instrumentation would check each of those accesses against a shadow no checker marks, and keep
// the step's loop over the lanes from vectorising: the step was 8% of a checked GEMV's run.
#if SIMT_ACCESS_HOOKS && (defined(__GNUC__) || defined(__clang__))
#define SIMT_RUNTIME_MEMORY_ONLY __attribute__((no_sanitize_address))
#else
#define SIMT_RUNTIME_MEMORY_ONLY
#endif

// Builtins: rewritten by the scheduler on every fiber switch / block start.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

// Every launch that completes is reported to `sink` (null: none, the default) from the launching
// thread. Exported with C linkage under this fixed name so a host can reach the runtime inside a
// dlopen'ed library; the launch records of docs/trace-format.md come from here.
extern "C" void driftscope_simt_set_launch_sink(simt_launch_sink sink, void* user);
// Launches found to race under Config::race_schedules are reported to `sink` (null: none).
extern "C" void driftscope_simt_set_race_sink(simt_race_sink sink, void* user);
// simt::set_config through plain C, for a host reaching this runtime inside a dlopen'ed library.
extern "C" void driftscope_simt_set_options(const struct simt_options* options);
// The candidate step under way (`name`, null or "" outside any): the runtime files every block
// simt::malloc hands out under it, for driftscope_simt_live_step_allocations.
extern "C" void driftscope_simt_begin_step(const char* name);
// Every live block some step allocated, by step and the line that asked for it: one message each,
// "STEP\tFILE:LINE\tBLOCKS\tBYTES" (valid only during the call of `each`).
extern "C" void driftscope_simt_live_step_allocations(void (*each)(const char* message, void* user),
                                                      void* user);

namespace simt {

using stream_t = struct CpuStream*;

void set_config(const Config& c);
Config config();
// What Config::host_threads = 0 means: every core (std::thread::hardware_concurrency(), at least 1).
unsigned default_host_threads();
// Empty when Config::racecheck (the shared-memory hazard checker) runs here; otherwise why not.
std::string racecheck_unsupported();
// Reads of shared memory no thread of the block had written, found by the hazard checker in
// kernels built with access hooks (the CHECKED flavour) since the last call: kernel and file:line.
std::vector<std::string> take_uninit_reads();
// Config::memcheck's findings since the last call (each also among take_uninit_reads, which takes
// them too, starting with memcheck_note): the launches' bad accesses, the host's bad frees.
std::vector<std::string> take_memory_findings();

// `where`: the line that asked for the block, which a leak report names (set_allocation_step).
void* malloc(std::size_t bytes, std::source_location where = std::source_location::current());
// `where`: the line that frees, which memcheck's finding of a bad free names.
void free(void* p, std::source_location where = std::source_location::current());
namespace detail {
// A failed SIMT_ASSERT (simt_cuda.h): in kernel code the running block stops with a KernelError
// naming `expr`, its file:line and the thread; elsewhere the C library's assert failure.
[[noreturn]] void assert_failed(const char* expr, const char* file, int line, const char* func);
}  // namespace detail
// cudaDeviceReset: frees every live device block of this runtime (a later use of one is a use
// after free, which memcheck names). Returns how many.
std::size_t device_reset();
void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind);
// cudaMemset's: `bytes` bytes of `value`, which memcheck counts as written.
void memset(void* dst, int value, std::size_t bytes);
inline void synchronize() {}

namespace detail {

struct Site {
  const char* file;
  int line;
};

// `fold`: a loop of shuffles of one variable fused into one collective (shfl_fold).
enum class Coll : std::uint8_t { syncwarp, shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all, fold };

// How a race finding prints a kernel argument's elements. simt_fp16.h adds __half and bf16.
enum class Elem : std::uint8_t { bytes, f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64 };

template <class T>
struct elem_kind {
  static constexpr Elem value = [] {
    if constexpr (std::is_same_v<T, float>)
      return Elem::f32;
    else if constexpr (std::is_same_v<T, double>)
      return Elem::f64;
    else if constexpr (std::is_integral_v<T>) {
      constexpr bool s = std::is_signed_v<T>;
      switch (sizeof(T)) {
        case 1: return s ? Elem::i8 : Elem::u8;
        case 2: return s ? Elem::i16 : Elem::u16;
        case 4: return s ? Elem::i32 : Elem::u32;
        case 8: return s ? Elem::i64 : Elem::u64;
      }
      return Elem::bytes;
    } else {
      return Elem::bytes;
    }
  }();
};

// A pointer argument of a launch: where race checking looks for the kernel's outputs.
struct PtrArg {
  const void* ptr;
  std::uint32_t elem_size;
  Elem elem;
  std::uint16_t index;  // position in the kernel's parameter list
  bool writable;        // not a pointer to const: what the kernel may write
};

struct LaunchDesc {
  void (*kernel)();  // for the launch record's name only; never called through this type
  dim3 grid;
  dim3 block;
  std::size_t dyn_smem_bytes;
  void (*invoke)(void* pack);
  void* pack;
  const PtrArg* ptr_args = nullptr;
  std::size_t n_ptr_args = 0;
  bool access_hooks = false;  // the kernel's accesses reach the hooks (SIMT_ACCESS_HOOKS)
};

void launch_impl(const LaunchDesc& d);

// A CUDA thread suspended at a collective or barrier: its saved context (fiber_hop.h), and the
// result that completing the collective leaves for it.
struct LaneSlot {
  void* ctx;
  alignas(16) unsigned char out[16];
};
// The switch hands a resumed lane the address of its context's word (fiber_hop.h), which is its
// slot's address.
static_assert(offsetof(LaneSlot, ctx) == 0);
// What a thread arriving at a collective or barrier does next: resume the context held in `*to`
// (null: run on), then read its result in slot->out.
struct Hop {
  LaneSlot* slot;
  void** to;
};
// A warp collective's arguments, packed so the call passes all of them in registers:
// `mask_kind_size` is mask | kind << 32 | size << 40, `b_width` is b | width << 32.
// A pending collective's signature adds the width at bit 48 (kSigWidthShift): the lanes of one
// collective must agree on mask, kind, size and width, and one word compares all four. A width
// that does not fit its 16 bits reads 0xffff, which no valid width is.
inline constexpr unsigned kSigWidthShift = 48;
constexpr std::uint64_t signature_of(std::uint64_t mask_kind_size, std::uint64_t width) {
  return mask_kind_size | (width <= 0xffffu ? width : 0xffffu) << kSigWidthShift;
}
// warp_arrive handles the usual arrival only, in a function that makes no call (so needs no
// frame); for anything else it records nothing and returns a null slot, and the kernel calls
// collective_arrive_general with the same arguments. It takes the signature ready made (at
// nearly every call site mask, kind, size and width are constants, so it costs the kernel
// nothing) and the value's 16 bytes in two registers (`lo` and `hi`, its bytes in memory order),
// not through a pointer: a value the kernel stored and the runtime loaded again would put a
// store-to-load forwarding (slower still from a vector register to an integer one) on every
// lane's path from its resumption to its next arrival.
Hop warp_arrive(Site s, std::uint64_t signature, std::uint64_t lo, std::uint64_t hi, std::uint64_t b_width);
Hop collective_arrive_general(Site s, std::uint64_t mask_kind_size, const void* in, std::uint64_t b_width);
// `combine`: Coll::syncwarp counts the predicates, Coll::all and Coll::any and or them.
// barrier_arrive is the usual arrival only, making no call; a null slot: the kernel calls
// barrier_arrive_general.
Hop barrier_arrive(Site s, int pred, Coll combine);
Hop barrier_arrive_general(Site s, int pred, Coll combine);
// The same, with the switch made inside the runtime (sanitizer builds and targets other than
// x86-64, where kernel code does not switch inline).
void collective(Site s, std::uint64_t mask_kind_size, const void* in, void* out, std::uint64_t b_width);
int barrier_wait(Site s, int pred, Coll combine);

// Every collective and barrier of a kernel: the runtime records the arrival and picks the next
// thread, and the switch to it is made here, inline at the kernel's call site (fiber_hop.h says
// why). The value is in `lo` and `hi` (its bytes in memory order); `size` is a constant at every
// call site.
[[gnu::always_inline]] inline void run_collective_words(Site s, std::uint64_t mask_kind_size,
                                                        std::uint64_t lo, std::uint64_t hi, void* out,
                                                        unsigned size, std::uint64_t b_width) {
#if SIMT_INLINE_SWITCH
  Hop h = warp_arrive(s, signature_of(mask_kind_size, b_width >> 32), lo, hi, b_width);
  if (h.slot == nullptr) [[unlikely]] {
    const std::uint64_t in[2] = {lo, hi};
    h = collective_arrive_general(s, mask_kind_size, in, b_width);
  }
  // Resumed, the lane's slot is what the switch returns (fiber_hop.h): no register survives it.
  if (h.to != nullptr) h.slot = static_cast<LaneSlot*>(fiber_hop(&h.slot->ctx, h.to));
  if (size != 0) std::memcpy(out, h.slot->out, size);
#else
  (void)size;
  const std::uint64_t in[2] = {lo, hi};
  collective(s, mask_kind_size, in, out, b_width);
#endif
}
[[gnu::always_inline]] inline void run_collective(Site s, std::uint64_t mask_kind_size, const void* in,
                                                  void* out, unsigned size, std::uint64_t b_width) {
  std::uint64_t words[2] = {0, 0};
  if (size != 0) std::memcpy(words, in, size);  // a constant size: one or two register moves
  run_collective_words(s, mask_kind_size, words[0], words[1], out, size, b_width);
}
[[gnu::always_inline]] inline int run_barrier(Site s, int pred, Coll combine) {
#if SIMT_INLINE_SWITCH
  Hop h = barrier_arrive(s, pred, combine);
  if (h.slot == nullptr) [[unlikely]]
    h = barrier_arrive_general(s, pred, combine);
  if (h.to != nullptr) h.slot = static_cast<LaneSlot*>(fiber_hop(&h.slot->ctx, h.to));
  int r = 0;
  std::memcpy(&r, h.slot->out, sizeof r);
  return r;
#else
  return barrier_wait(s, pred, combine);
#endif
}

inline int barrier(Site s, int pred) {
  return run_barrier(s, pred, Coll::syncwarp);
}  // threads with pred != 0
inline int barrier_and(Site s, int pred) { return run_barrier(s, pred, Coll::all); }
inline int barrier_or(Site s, int pred) { return run_barrier(s, pred, Coll::any); }
inline void syncwarp(Site s, unsigned mask = 0xffffffffu) {
  run_collective(s, mask | std::uint64_t{static_cast<std::uint8_t>(Coll::syncwarp)} << 32, nullptr, nullptr,
                 0, std::uint64_t{32} << 32);
}
inline unsigned vote(Site s, Coll kind, unsigned mask, int pred) {
  unsigned r = 0;
  run_collective(s, mask | std::uint64_t{static_cast<std::uint8_t>(kind)} << 32 | std::uint64_t{4} << 40,
                 &pred, &r, 4, std::uint64_t{32} << 32);
  return r;
}
unsigned activemask();
// `elem_bytes`: the declared element size, how wide the hazard checker records an access.
void* dynamic_shared(std::size_t elem_bytes);
// The running block's dynamic shared memory while no checker watches it (the runtime sets it per
// block; null otherwise): kernel code takes it without a call, and calls dynamic_shared only when
// a checker must learn the declared element size.
inline thread_local unsigned char* tl_unwatched_dyn_smem = nullptr;
inline void* dynamic_shared_of(std::size_t elem_bytes) {
  unsigned char* const p = tl_unwatched_dyn_smem;
  return p != nullptr ? p : dynamic_shared(elem_bytes);
}
// A static __shared__ declaration reached (the rewriter of .cu files adds the call): where
// Config::poison asks for it, the block's first thread to reach it fills it with the poison.
void static_shared(void* p, std::size_t bytes);
// The same for the checked flavour, whose rewrite declares the array under another name, between
// red zones of kStaticSharedRedZone bytes, and reaches it through the reference this returns:
// through a pointer the compiler cannot follow, so every access, at a constant index too, is
// checked against the access shadow.
void watch_static_shared(void* p, std::size_t bytes, std::size_t elem_bytes);
// The 16-bit poison word of the running launch's Config::poison, 0 when it sets none: what a
// local declared without an initializer starts as (poison_local).
extern std::atomic<std::uint16_t> g_local_poison;
// Under a poison: the word the local `name` declared at file:line starts as (Config::poison_site
// singles one site out), and the site noted for the running launch's record (local_sites.h).
std::uint16_t local_poison_word(const char* name, const char* file, int line);
// A local of a .cu kernel declared without an initializer (`float acc;`, `float v[4];`): the
// rewriter adds the call after the declaration, with the name and the author's file:line, so under
// Config::poison it starts as the poison and a read before the first write shows in the output.
// Assigned through a copy, not a call taking its address, so the optimizer keeps such a local in
// a register as before; off, one load.
template <class T>
inline void poison_local(T& x, const char* name, const char* file, int line) {
  if (g_local_poison.load(std::memory_order_relaxed) == 0) [[likely]]
    return;
  const std::uint16_t word = local_poison_word(name, file, line);
  if constexpr (std::is_trivially_copyable_v<T>) {
    unsigned char bytes[sizeof(T)];
    for (std::size_t i = 0; i < sizeof(T); ++i)
      bytes[i] = static_cast<unsigned char>(i % 2 == 0 ? word & 0xFFu : word >> 8);
    std::memcpy(static_cast<void*>(&x), bytes, sizeof(T));
  }
}
// True while a launch of a kernel with access hooks runs under Config::memcheck (src/memcheck.h).
extern std::atomic<bool> g_memcheck_launch;
// Memcheck's misaligned access seen at a pointer cast: `p`, cast to a type of `size` bytes that a
// GPU accesses only at a multiple of `align`, is not one (a no-op outside a memcheck launch's
// kernel code, and for memory memcheck does not own).
// `file` and `line`: the cast's own, so the finding names the kernel's line, not this header's.
[[gnu::noinline, gnu::cold]] void misaligned_cast(const void* p, std::size_t align, std::size_t size,
                                                  const char* file, unsigned line);
// The checked flavour's reinterpret_cast (the rewriter of driftscope_add_simt_kernel(... CHECKED)
// puts it in the place of every one): the same cast, which under memcheck also checks a pointer to
// a type a GPU must access aligned (float4, half2, a float) against that alignment. A vector type's
// access is often split into scalar loads the hooks cannot tell from aligned ones, so the cast,
// where the kernel says what it will load, is where the misalignment shows.
// A pointer to an incomplete type, an opaque handle such as cudaStream_t's CUstream_st (operator
// libraries take their stream as a void* and cast it back), is never loaded through: nothing to check.
template <class T>
concept complete_object_type = requires { sizeof(T); };
template <class To, class From>
inline To checked_reinterpret_cast(From&& from, std::source_location at = std::source_location::current()) {
  if constexpr (std::is_pointer_v<To> && std::is_pointer_v<std::remove_cvref_t<From>>) {
    using Elem = std::remove_cv_t<std::remove_pointer_t<To>>;
    if constexpr (!std::is_void_v<Elem> && !std::is_function_v<Elem> && complete_object_type<Elem>) {
      if constexpr (alignof(Elem) > 1) {
        To to = reinterpret_cast<To>(from);
        if (g_memcheck_launch.load(std::memory_order_relaxed) &&
            reinterpret_cast<std::uintptr_t>(to) % alignof(Elem) != 0) [[unlikely]]
          misaligned_cast(to, alignof(Elem), sizeof(Elem), at.file_name(), at.line());
        return to;
      }
    }
  }
  return reinterpret_cast<To>(from);
}
// The red zones before and after each static __shared__ array of a kernel built CHECKED (the
// rewriter declares it between two of this many bytes): memcheck poisons them.
inline constexpr std::size_t kStaticSharedRedZone = 64;
template <class T>
inline T& watched_static_shared(T& x) {
  watch_static_shared(&x, sizeof(T), sizeof(std::remove_all_extents_t<T>));
  T* p = &x;
  asm volatile("" : "+r"(p));
  return *p;
}

// Every __shfl*_sync: `b` is the source lane, the delta or the lane mask, as `kind` reads it.
template <Coll kind, class T>
inline T shfl_as(Site s, unsigned mask, T v, int b, int width) {
  static_assert(std::is_trivially_copyable_v<T>, "shuffled type must be trivially copyable");
  static_assert(sizeof(T) <= 16, "shuffled type must be at most 16 bytes");
  T r = v;
  run_collective(
      s, mask | std::uint64_t{static_cast<std::uint8_t>(kind)} << 32 | std::uint64_t{sizeof(T)} << 40, &v, &r,
      sizeof(T), static_cast<std::uint32_t>(b) | std::uint64_t{static_cast<std::uint32_t>(width)} << 32);
  return r;
}
template <class T>
inline T shfl_idx(Site s, unsigned mask, T v, int src_lane, int width = warpSize) {
  return shfl_as<Coll::shfl_idx>(s, mask, v, src_lane, width);
}
template <class T>
inline T shfl_up(Site s, unsigned mask, T v, unsigned delta, int width = warpSize) {
  return shfl_as<Coll::shfl_up>(s, mask, v, static_cast<int>(delta), width);
}
template <class T>
inline T shfl_down(Site s, unsigned mask, T v, unsigned delta, int width = warpSize) {
  return shfl_as<Coll::shfl_down>(s, mask, v, static_cast<int>(delta), width);
}
template <class T>
inline T shfl_xor(Site s, unsigned mask, T v, int lane_mask, int width = warpSize) {
  return shfl_as<Coll::shfl_xor>(s, mask, v, lane_mask, width);
}

// The lane whose value `lane` reads in a shuffle of `kind` with operand `b` at a width whose
// segment mask is `segmask` ((32 - width) & 31), following the PTX shfl.sync pseudo-code (clamp,
// and the lane's own value when the source is out of range). The runtime's shuffles and a fused
// loop's step function (shfl_fold) both use it.
template <Coll kind>
SIMT_RUNTIME_MEMORY_ONLY inline int shuffle_source(int lane, int b, int segmask) {
  constexpr int cval = kind == Coll::shfl_up ? 0 : 31;
  const int bval = b & 31;
  const int max_lane = (lane & segmask) | (cval & ~segmask);
  int j = lane;
  bool ok = false;
  if constexpr (kind == Coll::shfl_up) {
    j = lane - bval;
    ok = j >= max_lane;
  } else if constexpr (kind == Coll::shfl_down) {
    j = lane + bval;
    ok = j <= max_lane;
  } else if constexpr (kind == Coll::shfl_xor) {
    j = lane ^ bval;
    ok = j <= max_lane;
  } else {
    j = (lane & segmask) | (bval & ~segmask);
    ok = j <= max_lane;
  }
  return ok ? j : lane;
}

// A loop whose body folds one variable with its own shuffle, `for (...) acc += __shfl_xor_sync(m,
// acc, o);`, fused by the .cu rewrite step (tools/shuffle_loop.cpp) into one collective: each lane
// first runs the loop with a body that only records each step's mask, source operand and width,
// then arrives once with its value, and the lane that completes the collective computes every
// step for every lane, calling each lane's own body on its own value and the value its source lane
// held after the step before. Per step that is what the shuffle and the body compute, in the same
// order, so every bit is the same as the loop's; each lane suspends once instead of once a step.
struct FoldSteps {
  static constexpr int kMax = 8;  // a warp's butterfly has 5 steps; a longer loop runs as written
  int n = 0;
  unsigned mask = 0;
  int width = 0;
  bool uniform = true;  // every step has the first one's mask and width
  int b[kMax] = {};     // zero past n: resolve_fold compares every lane's whole array with one compare
  void add(unsigned step_mask, int step_b, int step_width = warpSize) {
    if (n == 0) {
      mask = step_mask;
      width = step_width;
    } else if (step_mask != mask || step_width != width) {
      uniform = false;
    }
    if (n < kMax) b[n] = step_b;
    ++n;
  }
  // Whether the fused collective can run the loop: otherwise the loop runs as written.
  bool fusable() const { return uniform && n >= 1 && n <= kMax; }
};
// What a lane hands the fused collective besides its value: its steps, and one step of the loop
// for the lanes of `mask` (`src[l]`: the lane whose value of `cur` lane l's shuffle reads; the
// body applied to lane l's value of `cur` and that one, into `next`). A null `src` is the usual
// step, a full warp at width 32 whose lanes all have operand `b`: the step function finds each
// source itself, with no table to fill and read. The rewrite step fuses only bodies that are a
// function of those two values alone (shuffle_loop.h), so the lane completing the collective runs
// its own lane's step function for every lane.
struct FoldLane {
  const FoldSteps* steps;
  void (*step)(void* body, unsigned char (*next)[8], const unsigned char (*cur)[8], const std::uint8_t* src,
               unsigned mask, int b);
  void* body;
  Coll shuffle;  // the loop's shuffle: shfl_idx, shfl_up, shfl_down or shfl_xor
};
template <Coll kind, class T, class Body>
inline T shfl_fold(Site s, const FoldSteps& steps, T value, Body& body) {
  if constexpr (sizeof(T) > 8) {
    // The runtime's slot holds 8 bytes of value: the loop's own steps, one collective each.
    for (int i = 0; i < steps.n; ++i)
      body(value, shfl_as<kind>(s, steps.mask, value, steps.b[i], steps.width));
    return value;
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "shuffled type must be trivially copyable");
    FoldLane lane{&steps,
                  [](void* body, unsigned char(*next)[8], const unsigned char(*cur)[8],
                     const std::uint8_t* src, unsigned mask, int b) SIMT_RUNTIME_MEMORY_ONLY {
                    Body& fold = *static_cast<Body*>(body);
                    // Lane l's step, reading lane j's value.
                    const auto step = [&](int l, int j) SIMT_RUNTIME_MEMORY_ONLY {
                      T x;
                      std::memcpy(&x, cur[l], sizeof x);
                      T y;
                      std::memcpy(&y, cur[j], sizeof y);
                      fold(x, y);
                      std::memcpy(next[l], &x, sizeof x);
                    };
                    if (src == nullptr) {
#pragma GCC unroll 8
                      for (int l = 0; l < 32; ++l) step(l, shuffle_source<kind>(l, b, 0));
                      return;
                    }
                    for (unsigned m = mask; m != 0; m &= m - 1) {
                      const int l = std::countr_zero(m);
                      step(l, src[l]);
                    }
                  },
                  &body, kind};
    // The value in the first 8 bytes, the lane's FoldLane in the next 8 (the runtime's `in`), both
    // in registers: a value stored to build them and loaded again would wait for the store.
    std::uint64_t lo = 0;
    std::memcpy(&lo, &value, sizeof value);
    // The runtime's result is the collective's size, 16 bytes; the value is its first sizeof(T).
    alignas(16) unsigned char out[16];
    run_collective_words(
        s, steps.mask | std::uint64_t{static_cast<std::uint8_t>(Coll::fold)} << 32 | std::uint64_t{16} << 40,
        lo, reinterpret_cast<std::uintptr_t>(&lane), out, 16,
        std::uint64_t{static_cast<std::uint32_t>(steps.width)} << 32);
    T r;
    std::memcpy(&r, out, sizeof r);
    return r;
  }
}

template <class... KArgs>
struct KernelPack {
  void (*fn)(KArgs...);
  std::tuple<std::decay_t<KArgs>...> args;
  static void invoke(void* p) {
    auto* k = static_cast<KernelPack*>(p);
    std::apply(k->fn, k->args);
  }
  static constexpr std::size_t n_ptrs = (std::size_t{0} + ... + std::is_pointer_v<std::decay_t<KArgs>>);
  // The pointer arguments, in parameter order (void* ones as bytes).
  std::array<PtrArg, n_ptrs> ptr_args() const {
    std::array<PtrArg, n_ptrs> out{};
    std::size_t n = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (add_ptr(out, n, static_cast<std::uint16_t>(I), std::get<I>(args)), ...);
    }
    (std::index_sequence_for<KArgs...>{});
    return out;
  }

 private:
  template <class A>
  static void add_ptr([[maybe_unused]] std::array<PtrArg, n_ptrs>& out, [[maybe_unused]] std::size_t& n,
                      [[maybe_unused]] std::uint16_t index, [[maybe_unused]] const A& a) {
    if constexpr (std::is_pointer_v<A>) {
      using T = std::remove_cv_t<std::remove_pointer_t<A>>;
      constexpr bool writable = !std::is_const_v<std::remove_pointer_t<A>>;
      if constexpr (std::is_void_v<T> || std::is_function_v<T>) {
        out[n++] = PtrArg{reinterpret_cast<const void*>(a), 1, Elem::bytes, index, writable};
      } else {
        out[n++] = PtrArg{a, sizeof(T), elem_kind<T>::value, index, writable};
      }
    }
  }
};

}  // namespace detail

// The checked flavour's launch is a different function (an inline namespace changes its mangled
// name): a binary holding both flavours of a kernel signature keeps both, each saying what it is.
#if SIMT_ACCESS_HOOKS
inline namespace access_hooked {
#endif
// Runs the whole grid before returning (the stream is ignored). Arguments are
// converted to the kernel's parameter types once and copied into every thread.
template <class... KArgs, class... Args>
void launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t dyn_smem_bytes, stream_t /*stream*/,
            Args&&... args) {
  detail::KernelPack<KArgs...> pack{kernel, std::tuple<std::decay_t<KArgs>...>(std::forward<Args>(args)...)};
  const auto ptrs = pack.ptr_args();
  detail::launch_impl({reinterpret_cast<void (*)()>(kernel), grid, block, dyn_smem_bytes,
                       &detail::KernelPack<KArgs...>::invoke, &pack, ptrs.data(), ptrs.size(),
                       SIMT_ACCESS_HOOKS != 0});
}
#if SIMT_ACCESS_HOOKS
}  // namespace access_hooked
#endif

}  // namespace simt

// Collectives are macros so diagnostics can name the call site.
#define SIMT_SITE (::simt::detail::Site{__FILE__, __LINE__})
// Before the loop that records a fused shuffle loop's steps (the rewrite step's shuffle_loop.cpp):
// unrolled, a constant header's steps, mask and width are constants, and each lane records them
// with a few stores instead of running the header and its checks (FoldSteps::add) every step.
#define SIMT_FOLD_UNROLL _Pragma("GCC unroll 8")  // Clang reads GCC's spelling too
#define __syncthreads() ((void)::simt::detail::barrier(SIMT_SITE, 0))
#define __syncthreads_count(pred) ::simt::detail::barrier(SIMT_SITE, (pred))
#define __syncthreads_and(pred) ::simt::detail::barrier_and(SIMT_SITE, (pred))
#define __syncthreads_or(pred) ::simt::detail::barrier_or(SIMT_SITE, (pred))
#define __syncwarp(...) ::simt::detail::syncwarp(SIMT_SITE __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) ::simt::detail::shfl_idx(SIMT_SITE, __VA_ARGS__)
#define __shfl_up_sync(...) ::simt::detail::shfl_up(SIMT_SITE, __VA_ARGS__)
#define __shfl_down_sync(...) ::simt::detail::shfl_down(SIMT_SITE, __VA_ARGS__)
#define __shfl_xor_sync(...) ::simt::detail::shfl_xor(SIMT_SITE, __VA_ARGS__)
#define __ballot_sync(mask, pred) \
  ::simt::detail::vote(SIMT_SITE, ::simt::detail::Coll::ballot, (mask), (pred))
#define __any_sync(mask, pred) \
  static_cast<int>(::simt::detail::vote(SIMT_SITE, ::simt::detail::Coll::any, (mask), (pred)))
#define __all_sync(mask, pred) \
  static_cast<int>(::simt::detail::vote(SIMT_SITE, ::simt::detail::Coll::all, (mask), (pred)))

#define SIMT_DYNAMIC_SHARED(T, name) \
  T* const name = static_cast<T*>(::simt::detail::dynamic_shared_of(sizeof(T)))

// Lanes run one at a time between collectives, so every lane that has not
// exited counts as active.
inline unsigned __activemask() { return ::simt::detail::activemask(); }

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Cache-hinted loads and stores: the CPU has one memory, so each is a plain access.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline T __ldcv(const T* p) {
  return *p;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}

// ---- atomics: relaxed, like the GPU's, but safe across host threads ----
namespace simt::detail {
// While the hazard checker runs a block, the addresses its atomics touch (src/block_writes.h):
// a byte two blocks change only through atomics is no race.
void note_atomic(const void* p, std::size_t bytes);
inline thread_local bool tl_note_atomics = false;
// The address of the running thread's last atomic and that thread (linear index): under access
// hooks its accesses there count as atomic (src/access_shadow.h). Kernels with access hooks run
// on one host thread (launch.cpp), so these need not be thread_local.
inline const void* g_atomic_target = nullptr;
inline std::uint32_t g_atomic_thread = 0;
template <class T>
inline std::atomic_ref<T> atomic_at(T* p) {
  if (tl_note_atomics) [[unlikely]]
    note_atomic(p, sizeof(T));
#if SIMT_ACCESS_HOOKS
  g_atomic_target = p;
  g_atomic_thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#endif
  return std::atomic_ref<T>(*p);
}
}  // namespace simt::detail
inline int atomicAdd(int* p, int v) {
  return ::simt::detail::atomic_at(p).fetch_add(v, std::memory_order_relaxed);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return ::simt::detail::atomic_at(p).fetch_add(v, std::memory_order_relaxed);
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return ::simt::detail::atomic_at(p).fetch_add(v, std::memory_order_relaxed);
}
inline float atomicAdd(float* p, float v) {
  return ::simt::detail::atomic_at(p).fetch_add(v, std::memory_order_relaxed);
}
inline double atomicAdd(double* p, double v) {
  return ::simt::detail::atomic_at(p).fetch_add(v, std::memory_order_relaxed);
}
inline int atomicSub(int* p, int v) {
  return ::simt::detail::atomic_at(p).fetch_sub(v, std::memory_order_relaxed);
}
inline unsigned atomicSub(unsigned* p, unsigned v) {
  return ::simt::detail::atomic_at(p).fetch_sub(v, std::memory_order_relaxed);
}
template <class T>
inline T simt_atomic_update(T* p, T v, bool want_max) {
  std::atomic_ref<T> a = ::simt::detail::atomic_at(p);
  T old = a.load(std::memory_order_relaxed);
  while ((want_max ? old < v : v < old) && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
}
inline int atomicMax(int* p, int v) { return simt_atomic_update(p, v, true); }
inline unsigned atomicMax(unsigned* p, unsigned v) { return simt_atomic_update(p, v, true); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return simt_atomic_update(p, v, true);
}
inline int atomicMin(int* p, int v) { return simt_atomic_update(p, v, false); }
inline unsigned atomicMin(unsigned* p, unsigned v) { return simt_atomic_update(p, v, false); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  return simt_atomic_update(p, v, false);
}
template <class T>
inline T simt_atomic_cas(T* p, T compare, T v) {
  ::simt::detail::atomic_at(p).compare_exchange_strong(compare, v, std::memory_order_relaxed);
  return compare;  // holds the old value either way
}
inline int atomicCAS(int* p, int c, int v) { return simt_atomic_cas(p, c, v); }
inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) { return simt_atomic_cas(p, c, v); }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  return simt_atomic_cas(p, c, v);
}
inline int atomicExch(int* p, int v) {
  return ::simt::detail::atomic_at(p).exchange(v, std::memory_order_relaxed);
}
inline unsigned atomicExch(unsigned* p, unsigned v) {
  return ::simt::detail::atomic_at(p).exchange(v, std::memory_order_relaxed);
}
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return ::simt::detail::atomic_at(p).exchange(v, std::memory_order_relaxed);
}
inline float atomicExch(float* p, float v) {
  return ::simt::detail::atomic_at(p).exchange(v, std::memory_order_relaxed);
}

// ---- math intrinsics: host IEEE functions stand in for the GPU's approximations ----
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
// Always inlined: a fused shuffle loop's body (SIMT_RUNTIME_MEMORY_ONLY) may be `max(x, s)`, and
// GCC inlines nothing else into a function whose instrumentation differs from the callee's.
[[gnu::always_inline]] inline int min(int a, int b) { return a < b ? a : b; }
[[gnu::always_inline]] inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
[[gnu::always_inline]] inline long long min(long long a, long long b) { return a < b ? a : b; }
[[gnu::always_inline]] inline float min(float a, float b) { return std::fmin(a, b); }
[[gnu::always_inline]] inline int max(int a, int b) { return a > b ? a : b; }
[[gnu::always_inline]] inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
[[gnu::always_inline]] inline long long max(long long a, long long b) { return a > b ? a : b; }
[[gnu::always_inline]] inline float max(float a, float b) { return std::fmax(a, b); }
// The rest of CUDA's host-and-device min/max overloads: with one argument unsigned the other is
// converted to it, as C++'s usual arithmetic conversions do (so min(-1, 2u) is 2u, as under nvcc),
// and a float beside a double is a double. Without them `min(C - 1, i + u * blockDim.x)`, an int
// beside an unsigned, is ambiguous on the CPU.
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long min(long a, unsigned long b) { return min(static_cast<unsigned long>(a), b); }
inline unsigned long min(unsigned long a, long b) { return min(a, static_cast<unsigned long>(b)); }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long min(long long a, unsigned long long b) {
  return min(static_cast<unsigned long long>(a), b);
}
inline unsigned long long min(unsigned long long a, long long b) {
  return min(a, static_cast<unsigned long long>(b));
}
inline double min(double a, double b) { return std::fmin(a, b); }
inline double min(float a, double b) { return std::fmin(double(a), b); }
inline double min(double a, float b) { return std::fmin(a, double(b)); }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline unsigned long max(long a, unsigned long b) { return max(static_cast<unsigned long>(a), b); }
inline unsigned long max(unsigned long a, long b) { return max(a, static_cast<unsigned long>(b)); }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline unsigned long long max(long long a, unsigned long long b) {
  return max(static_cast<unsigned long long>(a), b);
}
inline unsigned long long max(unsigned long long a, long long b) {
  return max(a, static_cast<unsigned long long>(b));
}
inline double max(double a, double b) { return std::fmax(a, b); }
inline double max(float a, double b) { return std::fmax(double(a), b); }
inline double max(double a, float b) { return std::fmax(a, double(b)); }
