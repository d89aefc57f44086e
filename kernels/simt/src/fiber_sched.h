// The fiber scheduler's state and its hot path, shared by the two halves of the scheduler:
// runtime.cpp (fibers, blocks, barriers) and warp_collectives.cpp (shuffles, votes, __syncwarp).
// Private to the runtime; launch.cpp sees only sched.h.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "allocations.h"
#include "fiber_switch.h"
#include "hazards.h"
#include "simt/simt_cpu.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SIMT_ASAN 1
#else
#define SIMT_ASAN 0
#endif

namespace simt::detail {

constexpr std::size_t kStackBytes = 64 * 1024;
constexpr unsigned kFullMask = 0xffffffffu;

struct ThreadRec;
class Interleaver;

// The schedules' generator (SplitMix64): random order's shuffles, interleaving's coin and choice.
inline std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Fiber {
  void* ctx = nullptr;       // saved context while suspended (fiber_switch.h)
  void* stack_lo = nullptr;  // lowest usable address (ASan wants bottom + size)
  std::size_t stack_size = 0;
  void* stack_top = nullptr;
  void* fake_stack = nullptr;   // ASan fake-stack handle saved across a switch
  ThreadRec* thread = nullptr;  // CUDA thread currently bound to this fiber
  bool is_host = false;
};

enum class State : std::uint8_t { runnable, running, at_warp, at_barrier, exited };

struct WarpRec;

// Cache-line aligned: a record the malloc of threads_ left at an address that is only 16-byte
// aligned spans three lines instead of two, and the usual arrival then touches a line more per lane
// (the same binary ran 15-18% slower or faster with the heap's state, for example with the length
// of its own file name).
struct alignas(64) ThreadRec {
  LaneSlot slot{};         // context while suspended mid-kernel; a collective's or barrier's result
  Fiber* fiber = nullptr;  // null until started and after exit
  WarpRec* wr = nullptr;   // &warps_[warp]
  // The thread one rank above this one in its warp (make_order; null for the warp's last rank),
  // and that rank: the usual arrival's guess at the next thread to run. The guess is read
  // straight from the running thread, so the chain of dependent loads from one lane's arrival to
  // the next lane's is two long (cur_, succ) instead of four (cur_, wr, runnable_r, by_rank); the
  // arrival checks it against the warp's lowest runnable rank, off that chain.
  //
  // The usual arrivals and a thread's exit also fetch, a switch ahead, the top of the stack that
  // succ's succ resumes on (prefetch_stack_top). At a fused loop and at a thread's exit that thread
  // is suspended; at the barrier it usually has not started, and the barrier fetches, instead, the
  // stack of the parked fiber it will take: an unstarted thread's slot holds a stale pointer,
  // whose lines would evict useful ones.
  ThreadRec* succ = nullptr;
  uint3 idx{};
  std::uint16_t warp = 0;
  std::uint8_t lane = 0;
  State state = State::runnable;
  unsigned lane_bit = 0;  // 1 << lane
  // 1 << succ's rank; 3 when null, which no mask's lowest bit is (nor an empty mask's, 0).
  unsigned succ_rank_bit = 3;
  // Pending collective or barrier: kind, mask, size and width (signature_of, simt_cpu.h), the shuffle's
  // operand, a vote's or barrier's predicate, the call site.
  std::uint64_t signature = 0;
  int b = 0;
  int pred = 0;
  Site site{nullptr, 0};
  alignas(16) unsigned char in[16];

  // Whether succ is the lowest rank of `runnable`, the warp's runnable ranks: the next to run.
  bool succ_runs_next(unsigned runnable) const { return (runnable & (0u - runnable)) == succ_rank_bit; }
  Coll kind() const { return static_cast<Coll>(signature >> 32 & 0xffu); }
  unsigned mask() const { return static_cast<unsigned>(signature); }
  unsigned size() const { return static_cast<unsigned>(signature >> 40 & 0xffu); }
  int width() const { return static_cast<int>(signature >> kSigWidthShift & 0xffffu); }
};

struct alignas(64) WarpRec {
  unsigned exists = 0;  // lanes present in the block (last warp may be partial)
  unsigned exited = 0;
  unsigned arrived = 0;     // lanes waiting at a warp collective
  unsigned runnable_r = 0;  // indexed by rank (execution order), not lane
  unsigned base = 0;        // linear id of lane 0
  // What a collective's signature reads, less its kind and size (kUsualSigBits), when its arrival
  // can take the usual path (warp_arrive): every lane of the warp as its mask, width 32, and no
  // lane exited. ~0 once one exited, which no signature reads.
  std::uint64_t usual = 0;
  std::uint32_t syncs = 0;  // warp collectives completed (orders lanes for the hazard checker)
  std::uint8_t lane_of_rank[32];
  std::uint8_t rank_of_lane[32];
  ThreadRec* by_rank[32];  // &threads_[base + lane_of_rank[r]] for the lanes that exist
};

// Fetches the two lines at the top of a suspended or parked context's stack (`sp`, the saved
// stack pointer), where its switch pops the resume address and the resumed code reloads what it
// spilled: a block's hundreds of fiber stacks do not stay in L1, and each switch waited for those
// lines (docs/simt-speed.md, sixth pass; one line was 2-3 ns per CUDA thread of the textbook GEMV,
// the second 2 more, a third nothing). Always inlined: GCC takes a function holding nothing but
// prefetches for one without effects, and removed the calls it had not inlined yet.
[[gnu::always_inline]] inline void prefetch_stack_top(const void* sp) {
  __builtin_prefetch(sp);
  __builtin_prefetch(static_cast<const unsigned char*>(sp) + 64);
}

constexpr std::uint64_t kUsualSigBits = 0xffff'0000'ffff'ffffull;  // mask and width

// Every lane of the warp: a collective's mask and width on the usual path (WarpRec::usual).
constexpr std::uint64_t usual_signature(unsigned exists) { return signature_of(exists, 32) & kUsualSigBits; }

// A barrier's pending signature: its combining kind alone.
constexpr std::uint64_t barrier_signature(Coll combine) {
  return signature_of(std::uint64_t{static_cast<std::uint8_t>(combine)} << 32, 0);
}

const char* coll_name(Coll k);
std::string where(Site s);
std::string tid(const uint3& t);
bool same_site(Site a, Site b);

// Per-OS-thread scheduler: runs one block at a time on its own fiber pool.
class Sched {
 public:
  Sched() { host_.is_host = true; }

  // Returns false (with error_/exception_ filled) if the block failed.
  bool run_block(const LaunchDesc& d, const Config& cfg, std::uint64_t linear_block);

  // Fiber-side entry points (called from kernel code on the current fiber).
  // A thread's arrival at a warp collective or a barrier: records it, completes the collective or
  // releases the barrier when it is the last, and picks the next thread (simt_cpu.h's Hop).
  // `mask_kind_size` and `b_width` as simt_cpu.h's run_collective packs them.
  [[gnu::always_inline]] inline Hop arrive_collective(Site s, std::uint64_t mask_kind_size, const void* in,
                                                      std::uint64_t b_width);
  // The same for the usual case only (warp_collectives.cpp says which), making no call: kernel
  // code's warp_arrive. A null slot: not the usual case, nothing recorded.
  [[gnu::always_inline]] inline Hop arrive_usual(Site s, std::uint64_t signature, std::uint64_t lo,
                                                 std::uint64_t hi, std::uint64_t b_width);
  Hop arrive_barrier(Site s, int pred, Coll combine);
  // The same for its usual case only (runtime.cpp says which), making no call; a null slot: not
  // the usual case, nothing recorded.
  [[gnu::always_inline]] inline Hop arrive_barrier_usual(Site s, int pred, Coll combine);
  // arrive_collective's rest, for the last lane of a collective or a warp with no lane left to run.
  [[gnu::noinline]] Hop complete_arrival(ThreadRec& t, WarpRec& w, unsigned mask);
  // prepare() for `next` on behalf of `t`, out of line so that arrive_collective's usual path makes
  // no call and needs no frame.
  [[gnu::noinline]] Hop hand_over(ThreadRec& t, ThreadRec* next);
  // The out-of-line path (simt_cpu.h's SIMT_INLINE_SWITCH off): the switch a Hop asks for.
  Fiber* current_fiber() const { return cur_->fiber; }
  void suspend_to(Fiber* self, const Hop& h) { switch_ctx(self, &h.slot->ctx, switching_to_, h.to); }
  unsigned active_mask() const {
    const WarpRec& w = warps_[cur_->warp];
    return w.exists & ~w.exited;
  }
  void* dyn_smem(std::size_t elem);
  // A static __shared__ array reached by a thread: under Config::poison the first thread of the
  // block to reach it fills it, so a read before the block's own writes sees the poison; the
  // checker of hooked kernels watches it for the rest of the block.
  void static_smem(void* p, std::size_t bytes, std::size_t elem);
  // The running thread and the block's barrier phases, for the access shadow's hot path.
  const ThreadRec* current_thread() const { return cur_; }
  bool in_kernel() const { return in_kernel_; }
  // Stops the block from the running thread, with `error` (memcheck's bad access: the thread must
  // not go on to make it).
  [[noreturn]] void fail_running(const char* error) {
    error_ = error;
    abandon(cur_->fiber);
  }
  std::uint64_t phase() const { return phase_; }
  AccessCtx access_ctx() const {
    return {static_cast<std::uint32_t>(cur_ - threads_.data()), cur_->warp, warps_[cur_->warp].syncs, phase_};
  }
  HazardReport take_hazards() { return hazards_.take(); }
  // Config::interleave at a hooked access of the running thread (interleave.cpp), made by the
  // instruction at `site` (site_is_hot): a seeded coin, which when true has another runnable
  // thread run first (yield_now). The coin is true one access in 8 for a site's first
  // kFullOddsAccesses accesses in the block, then one in 64: a loop's load of a shared-memory row
  // is made thousands of times per block and gains nothing from a switch at each eighth (at real
  // widths those switches were a third of the interleaved run), while an access a block makes a
  // few times per thread (the read-modify-write of a reduction's total, where a lost update
  // hides) keeps the one-in-8 odds however long the loop before it. Each coin is drawn as the
  // count of accesses to its next heads: a generator draw per 21 (or 10) tosses, not per access.
  static constexpr std::uint32_t kFullOddsAccesses = 64;
  bool yield_coin(std::uintptr_t site) {
    if (site_is_hot(site)) {
      if (--hot_accesses_to_yield_ != 0) return false;
      hot_accesses_to_yield_ = tosses_to_heads(6);
    } else {
      if (--accesses_to_yield_ != 0) return false;
      accesses_to_yield_ = tosses_to_heads(3);
    }
    return true;
  }
  // The coin of a hand-over to another block at a global load (Interleaver::on_access), drawn the
  // same way: 1 in 2 for a block's first kFullOddsHandovers hand-overs, then 1 in 64. A hand-over
  // wakes another host thread (two context switches, about 10 us on this machine's two cores), so
  // a block that loads what the launch writes at every step of a long loop (a GDN state, read and
  // written in place) would wait minutes at even odds; a kernel that loads such memory a few times
  // per block, where a lost update between blocks hides, keeps them.
  static constexpr std::uint32_t kFullOddsHandovers = 32;
  bool handover_coin() {
    if (--loads_to_handover_ != 0) return false;
    loads_to_handover_ = tosses_to_heads(++handovers_ < kFullOddsHandovers ? 1 : 6);
    return true;
  }
  // Before the block's first hooked access.
  void begin_interleave(std::uint64_t seed) {
    interleave_rng_ = seed;
    accesses_to_yield_ = tosses_to_heads(3);
    hot_accesses_to_yield_ = tosses_to_heads(6);
    sites_.fill(SiteCount{});
    handovers_ = 0;
    loads_to_handover_ = tosses_to_heads(1);
  }
  // The block's interleave generator.
  std::uint64_t interleave_draw() { return splitmix(interleave_rng_); }
  // A draw in [0, n) (multiply and shift: no division on the hooks' path).
  unsigned interleave_below(unsigned n) {
    return static_cast<unsigned>(((interleave_draw() >> 32) * n) >> 32);
  }
  // Tosses of a coin that comes up heads one time in 2^bits (bits 1, 3 or 6), up to and including
  // its next heads.
  std::uint32_t tosses_to_heads(unsigned bits);
  bool yield_now();
  // Counts an access of `site` in the block: true past its first kFullOddsAccesses. `site` is the
  // hook's return address less a fixed address of the same module (Interleaver::on_access), so
  // where the module was loaded changes neither its slot nor which sites find one: a seed stays
  // one schedule. A site whose few slots are taken counts as not hot.
  bool site_is_hot(std::uintptr_t site) {
    constexpr std::size_t kProbes = 8;
    const std::uintptr_t key = site | std::uintptr_t{1} << 63;  // never 0, a free slot's
    std::size_t i = (key ^ (key >> 7) ^ (key >> 13)) % sites_.size();
    for (std::size_t probe = 0; probe < kProbes; ++probe, i = (i + 1) % sites_.size()) {
      SiteCount& c = sites_[i];
      if (c.site == key) return ++c.accesses > kFullOddsAccesses;
      if (c.site == 0) {
        c = {key, 1};
        return false;
      }
    }
    return false;
  }

  [[noreturn]] void fiber_main(Fiber* self);
  static void leave_thread(void* fiber);
  void on_fiber_start();

  std::string error_;
  std::exception_ptr exception_;
  Fiber* switching_to_ = nullptr;
#if SIMT_ASAN
  Fiber* switching_from_ = nullptr;  // the fiber making the runtime's switch, for ASan's stack bounds
#endif

 private:
  Fiber* new_fiber();
  Fiber* pool_get();
  void reset_fiber(Fiber* f);
  [[gnu::always_inline]] inline void switch_ctx(Fiber* from, void** save, Fiber* to_fiber, void** to);
  [[gnu::always_inline]] inline void switch_to(Fiber* from, Fiber* to);
  [[gnu::always_inline]] inline void** prepare(Fiber* self, ThreadRec* next);
  [[gnu::always_inline]] inline void transfer(Fiber* self, ThreadRec* next);
  void after_block_for_fiber(Fiber* self);
  // Leaves the block for good. Callers assign error_ in a separate statement
  // first: temporaries still alive on an abandoned fiber would leak.
  [[noreturn]] void abandon(Fiber* self);
  [[noreturn, gnu::cold, gnu::noinline]] void fail_args(Fiber* self, Site s, std::uint64_t mask_kind_size,
                                                        int width);
  [[noreturn, gnu::cold, gnu::noinline]] void fail_stall(Fiber* self);
  // Strict mode: a barrier released with `waiting` among its threads after some threads exited.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_barrier_after_exit(Fiber* self, const ThreadRec& waiting);
  // Lane `t`'s shuffle of `kind` reads lane `src`, outside `mask`.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_source(Fiber* self, const ThreadRec& t, Coll kind, int src,
                                                          unsigned mask);
  void make_order(std::uint64_t phase);
  void set_runnable(ThreadRec& t) {
    WarpRec& w = warps_[t.warp];
    t.state = State::runnable;
    if (w.runnable_r == 0) warp_runnable_r_ |= 1u << rank_of_warp_[t.warp];
    w.runnable_r |= 1u << w.rank_of_lane[t.lane];
  }
  // The next thread to run (lowest rank of the lowest-ranked warp), taken off the runnable masks
  // in the same pass: this runs at every switch, so no lookup is repeated.
  ThreadRec* take_next() {
    if (warp_runnable_r_ == 0) return nullptr;
    return take_from(warps_[warp_of_rank_[std::countr_zero(warp_runnable_r_)]]);
  }
  // The same when the running thread's warp `w` had no lower-ranked warp made runnable since it
  // was picked (true until a barrier releases): a lower-ranked warp with runnable lanes would have
  // run first, so if `w` has runnable lanes the next thread is its lowest-ranked one, one lookup
  // away, and `w`'s bit is the lowest in warp_runnable_r_.
  ThreadRec* take_next_after(WarpRec& w) { return w.runnable_r != 0 ? take_from(w) : take_next(); }
  ThreadRec* take_from(WarpRec& wr) {
    ThreadRec* t = wr.by_rank[std::countr_zero(wr.runnable_r) & 31];  // runnable_r is never 0 here
    wr.runnable_r &= wr.runnable_r - 1;
    if (wr.runnable_r == 0) warp_runnable_r_ &= warp_runnable_r_ - 1;
    return t;
  }
  [[gnu::noinline]] void release_barrier(Fiber* self);
  [[gnu::noinline]] void resolve(Fiber* self, WarpRec& w, unsigned mask);
  void resolve_fold(Fiber* self, WarpRec& w, ThreadRec* lanes, unsigned mask);
  std::string stall_message();
  std::string ctx_suffix(const ThreadRec& t) const {
    return fmt::format(" [block {}, thread {}]", tid(blockIdx), tid(t.idx));
  }

  Fiber host_;
  std::vector<Fiber*> pool_;
  unsigned fibers_made_ = 0;
  std::vector<ThreadRec> threads_;
  std::vector<WarpRec> warps_;
  struct OrderKey {  // what make_order's tables were last made for
    const ThreadRec* threads = nullptr;
    unsigned nthreads = 0;
    Order order = Order::forward;
  } ordered_;
  struct LayoutKey {  // the block shape threads_' indices were last set for
    const ThreadRec* threads = nullptr;
    dim3 block{0, 0, 0};
  } laid_out_;
  std::uint8_t warp_of_rank_[32];
  std::uint8_t rank_of_warp_[32];
  unsigned warp_runnable_r_ = 0;
  unsigned nthreads_ = 0;
  unsigned nwarps_ = 0;
  unsigned at_barrier_ = 0;
  unsigned exited_ = 0;
  std::uint64_t phase_ = 0;
  std::uint64_t block_seed_ = 0;
  ThreadRec* cur_ = nullptr;
  // This host thread's threadIdx, the builtin kernel code reads: written at every switch, through
  // this pointer rather than a thread-local access (a call, where the runtime is in a plugin).
  uint3* thread_idx_ = &threadIdx;
  const LaunchDesc* desc_ = nullptr;
  Config cfg_;
  bool failed_ = false;
  Fiber* failed_fiber_ = nullptr;
  unsigned char* dyn_ = nullptr;
  std::size_t dyn_size_ = 0;
  bool dyn_allocated_ = false;
  bool dyn_guarded_ = false;       // dyn_ has memcheck's red zones (memcheck.h guarded_shared)
  bool in_kernel_ = false;         // the block's threads run (the host fiber waits in run_block)
  unsigned char* smem_ = nullptr;  // this block's dynamic shared memory: dyn_, or the checker's arena
  HazardChecker hazards_;
  bool smem_watched_ = false;    // a checker watches this block's shared memory (either kind)
  bool faulting_check_ = false;  // hazards_ watches this block (Config::racecheck, a kernel without hooks)
  std::vector<void*> static_smem_seen_;  // static __shared__ arrays poisoned in this block
  Interleaver* interleaver_ = nullptr;   // this block's, under Config::interleave (interleave.h)
  std::uint64_t interleave_rng_ = 0;
  std::uint32_t accesses_to_yield_ = 1;      // hooked accesses left before yield_coin is true
  std::uint32_t hot_accesses_to_yield_ = 1;  // the same at sites past their full-odds accesses
  struct SiteCount {
    std::uintptr_t site = 0;  // site_is_hot's key (the site with its top bit set); 0: a free slot
    std::uint32_t accesses = 0;
  };
  std::array<SiteCount, 128> sites_{};   // the block's sites under Config::interleave (site_is_hot)
  std::uint32_t loads_to_handover_ = 1;  // global loads left before handover_coin comes up
  std::uint32_t handovers_ = 0;          // the block's hand-overs so far
};

// Kernel code only runs inside run_block, which created this thread's Sched. Every collective
// reads it. Not initial-exec: that marks every module holding the runtime STATIC_TLS, and glibc
// then has to fit the module's whole TLS block (a kernel's static __shared__ arrays are
// thread_local: 5 KiB in the checked kernel module) into the few hundred bytes it keeps for
// libraries loaded later, so dlopen fails. The runtime is built with TLS descriptors
// (-mtls-dialect=gnu2) instead: in a shared library the access is a call that clobbers no
// register but its result, and an executable's link relaxes it to a plain offset.
extern constinit thread_local Sched* tl_sched;

// Saves the running context in `*save` (the fiber's own slot, or its thread's when the thread
// suspends mid-kernel) and resumes the context held in `*to`, which belongs to fiber `to_fiber`.
inline void Sched::switch_ctx([[maybe_unused]] Fiber* from, void** save, [[maybe_unused]] Fiber* to_fiber,
                              void** to) {
#if SIMT_ASAN
  __sanitizer_start_switch_fiber(&from->fake_stack, to_fiber->stack_lo, to_fiber->stack_size);
  switching_from_ = from;
#endif
  fiber_switch(save, to);
#if SIMT_ASAN
  const void* lo = nullptr;
  std::size_t sz = 0;
  __sanitizer_finish_switch_fiber(from->fake_stack, &lo, &sz);
  // The fiber that switched here, when the runtime's switch did (kernel code's switches leave it null).
  Fiber* const src = std::exchange(switching_from_, nullptr);
  if (src != nullptr && src->is_host) {
    src->stack_lo = const_cast<void*>(lo);
    src->stack_size = sz;
  }
#endif
}

inline void Sched::switch_to(Fiber* from, Fiber* to) {
  switching_to_ = to;
  switch_ctx(from, &from->ctx, to, &to->ctx);
}

// Makes `next` the running thread. Returns where the context to resume for it is held
// (switching_to_ is its fiber), or null when the calling fiber runs it itself.
inline void** Sched::prepare(Fiber* self, ThreadRec* next) {
  next->state = State::running;
  cur_ = next;
  *thread_idx_ = next->idx;
  if (next->fiber == self) return nullptr;
  if (next->fiber == nullptr) {
    if (!self->is_host && self->thread == nullptr) {
      // No-barrier fast path: a fiber whose thread just exited runs the next
      // unstarted thread as a plain call, no switch. Decided per thread, so a
      // later thread that does meet a collective simply suspends this fiber.
      self->thread = next;
      next->fiber = self;
      return nullptr;
    }
    Fiber* f = pool_get();  // parked: its context is its own
    f->thread = next;
    next->fiber = f;
    switching_to_ = f;
    return &f->ctx;
  }
  switching_to_ = next->fiber;
  return &next->slot.ctx;  // suspended mid-kernel: its context is its thread's
}

// prepare() and the switch, for a fiber that parks in its own slot (its thread exited, or the host).
inline void Sched::transfer(Fiber* self, ThreadRec* next) {
  if (void** to = prepare(self, next)) switch_ctx(self, &self->ctx, switching_to_, to);
}

}  // namespace simt::detail
