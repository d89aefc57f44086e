// The fiber scheduler's state and its hot path, shared by the two halves of the scheduler:
// runtime.cpp (fibers, blocks, barriers) and warp_collectives.cpp (shuffles, votes, __syncwarp).
// Private to the runtime; launch.cpp sees only sched.h.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
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

struct ThreadRec {
  Fiber* fiber = nullptr;  // null until started and after exit
  uint3 idx{};
  std::uint16_t warp = 0;
  std::uint8_t lane = 0;
  State state = State::runnable;
  // Pending collective or barrier.
  Coll kind = Coll::syncwarp;
  unsigned mask = 0;
  int b = 0;
  int width = 32;
  unsigned size = 0;
  int pred = 0;
  // kind, mask, width and size in one word: the lanes of one collective must agree on all four.
  std::uint64_t signature = 0;
  Site site{nullptr, 0};
  alignas(16) unsigned char in[16];
  alignas(16) unsigned char out[16];
};

struct WarpRec {
  unsigned exists = 0;  // lanes present in the block (last warp may be partial)
  unsigned exited = 0;
  unsigned arrived = 0;     // lanes waiting at a warp collective
  unsigned runnable_r = 0;  // indexed by rank (execution order), not lane
  unsigned base = 0;        // linear id of lane 0
  std::uint32_t syncs = 0;  // warp collectives completed (orders lanes for the hazard checker)
  std::uint8_t lane_of_rank[32];
  std::uint8_t rank_of_lane[32];
};

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
  int barrier(Site s, int pred, Coll combine);
  void warp_collective(Site s, Coll kind, unsigned mask, const void* in, void* out, unsigned size, int b,
                       int width);
  unsigned active_mask() const {
    const WarpRec& w = warps_[cur_->warp];
    return w.exists & ~w.exited;
  }
  void* dyn_smem(std::size_t elem) {
    if (cfg_.racecheck) hazards_.note_elem(elem);
    return smem_;
  }
  // A static __shared__ array reached by a thread: under Config::poison the first thread of the
  // block to reach it fills it, so a read before the block's own writes sees the poison.
  void static_smem(void* p, std::size_t bytes) {
    if (cfg_.poison == 0) return;
    if (std::find(static_smem_seen_.begin(), static_smem_seen_.end(), p) != static_smem_seen_.end()) return;
    static_smem_seen_.push_back(p);
    fill_poison(p, bytes, cfg_.poison);
  }
  AccessCtx access_ctx() const {
    return {static_cast<std::uint32_t>(cur_ - threads_.data()), cur_->warp, warps_[cur_->warp].syncs, phase_};
  }
  std::vector<std::string> take_hazards() { return hazards_.take(); }

  [[noreturn]] void fiber_main(Fiber* self);
  void on_fiber_start(void* from);

  std::string error_;
  std::exception_ptr exception_;
  Fiber* switching_to_ = nullptr;

 private:
  Fiber* new_fiber();
  Fiber* pool_get();
  void reset_fiber(Fiber* f);
  inline void switch_to(Fiber* from, Fiber* to);
  [[gnu::always_inline]] inline void transfer(Fiber* self, ThreadRec* next);
  void after_block_for_fiber(Fiber* self);
  // Leaves the block for good. Callers assign error_ in a separate statement
  // first: temporaries still alive on an abandoned fiber would leak.
  [[noreturn]] void abandon(Fiber* self);
  [[noreturn, gnu::cold, gnu::noinline]] void fail_args(Fiber* self, Site s, Coll kind, unsigned mask,
                                                        int width);
  [[noreturn, gnu::cold, gnu::noinline]] void fail_stall(Fiber* self);
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
    WarpRec& wr = warps_[warp_of_rank_[std::countr_zero(warp_runnable_r_)]];
    const unsigned lane = wr.lane_of_rank[std::countr_zero(wr.runnable_r) & 31];  // never 0 here
    wr.runnable_r &= wr.runnable_r - 1;
    if (wr.runnable_r == 0) warp_runnable_r_ &= warp_runnable_r_ - 1;
    return &threads_[wr.base + lane];
  }
  [[gnu::noinline]] void release_barrier(Fiber* self);
  [[gnu::noinline]] void resolve(Fiber* self, WarpRec& w, unsigned mask);
  std::string stall_message();
  std::string ctx_suffix(const ThreadRec& t) const {
    return fmt::format(" [block {}, thread {}]", tid(blockIdx), tid(t.idx));
  }

  Fiber host_;
  std::vector<Fiber*> pool_;
  unsigned fibers_made_ = 0;
  std::vector<ThreadRec> threads_;
  std::vector<WarpRec> warps_;
  std::uint8_t warp_of_rank_[32];
  std::uint8_t rank_of_warp_[32];
  unsigned warp_runnable_r_ = 0;
  unsigned nthreads_ = 0;
  unsigned nwarps_ = 0;
  unsigned at_barrier_ = 0;
  unsigned exited_ = 0;
  std::uint64_t phase_ = 0;
  std::uint64_t block_seed_ = 0;
  int barrier_result_ = 0;
  ThreadRec* cur_ = nullptr;
  const LaunchDesc* desc_ = nullptr;
  Config cfg_;
  bool failed_ = false;
  Fiber* failed_fiber_ = nullptr;
  unsigned char* dyn_ = nullptr;
  std::size_t dyn_size_ = 0;
  bool dyn_allocated_ = false;
  unsigned char* smem_ = nullptr;  // this block's dynamic shared memory: dyn_, or the checker's arena
  HazardChecker hazards_;
  std::vector<void*> static_smem_seen_;  // static __shared__ arrays poisoned in this block
};

// Kernel code only runs inside run_block, which created this thread's Sched.
extern thread_local Sched* tl_sched;

inline void Sched::switch_to(Fiber* from, Fiber* to) {
  switching_to_ = to;
#if SIMT_ASAN
  __sanitizer_start_switch_fiber(&from->fake_stack, to->stack_lo, to->stack_size);
#endif
  [[maybe_unused]] auto* src = static_cast<Fiber*>(fiber_switch(&from->ctx, to->ctx, from));
#if SIMT_ASAN
  const void* lo = nullptr;
  std::size_t sz = 0;
  __sanitizer_finish_switch_fiber(from->fake_stack, &lo, &sz);
  if (src->is_host) {
    src->stack_lo = const_cast<void*>(lo);
    src->stack_size = sz;
  }
#endif
}

// Makes `next` the running thread. Returns when the calling fiber should run
// its (possibly new) bound thread.
inline void Sched::transfer(Fiber* self, ThreadRec* next) {
  next->state = State::running;
  cur_ = next;
  threadIdx = next->idx;
  if (next->fiber == self) return;
  if (next->fiber == nullptr) {
    if (!self->is_host && self->thread == nullptr) {
      // No-barrier fast path: a fiber whose thread just exited runs the next
      // unstarted thread as a plain call, no switch. Decided per thread, so a
      // later thread that does meet a collective simply suspends this fiber.
      self->thread = next;
      next->fiber = self;
      return;
    }
    Fiber* f = pool_get();
    f->thread = next;
    next->fiber = f;
  }
  switch_to(self, next->fiber);
}

}  // namespace simt::detail
