// Fiber scheduler of the CPU backend: runs one block. One fiber per CUDA thread; a fiber
// that cannot continue (collective, barrier, exit) picks the next runnable thread of its
// block itself and jumps straight to it, so there is no central scheduler loop in the hot
// path. This file: fibers, blocks and barriers; warp collectives are in warp_collectives.cpp, the
// findings that stop a block (synccheck) in sync_findings.cpp, the state all share in
// fiber_sched.h. Grids, host threads and device memory are in launch.cpp.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "access_shadow.h"
#include "fiber_sched.h"
#include "interleave.h"
#include "local_sites.h"
#include "memcheck.h"
#include "sched.h"

namespace simt::detail {

const char* coll_name(Coll k) {
  switch (k) {
    case Coll::syncwarp: return "__syncwarp";
    case Coll::shfl_idx: return "__shfl_sync";
    case Coll::shfl_up: return "__shfl_up_sync";
    case Coll::shfl_down: return "__shfl_down_sync";
    case Coll::shfl_xor: return "__shfl_xor_sync";
    case Coll::ballot: return "__ballot_sync";
    case Coll::any: return "__any_sync";
    case Coll::all: return "__all_sync";
    case Coll::fold: return "a fused __shfl*_sync loop";
  }
  return "?";
}

std::string where(Site s) { return fmt::format("{}:{}", s.file ? s.file : "?", s.line); }
std::string tid(const uint3& t) { return fmt::format("({},{},{})", t.x, t.y, t.z); }

bool same_site(Site a, Site b) {
  return a.line == b.line && (a.file == b.file || (a.file && b.file && std::strcmp(a.file, b.file) == 0));
}

void fiber_entry(void* data);

constinit thread_local Sched* tl_sched = nullptr;
std::atomic<std::uint16_t> g_local_poison{0};

AccessCtx current_access_ctx() { return tl_sched->access_ctx(); }

Sched& sched() {
  if (tl_sched == nullptr) tl_sched = new Sched();  // lives as long as its OS thread; never freed on purpose
  return *tl_sched;
}

std::size_t page_bytes() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// The record lives at the top of its own mapping, so fibers never touch the heap
// and parked fibers are not reported as leaks.
Fiber* Sched::new_fiber() {
  const std::size_t guard = page_bytes();
  const std::size_t total = guard + kStackBytes;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  if (mprotect(base, guard, PROT_NONE) != 0) throw std::bad_alloc();  // overflow faults instead of corrupting
  auto* top = static_cast<unsigned char*>(base) + total;
  // Stacks are whole pages apart, so without an offset the hot top frames of every fiber share the
  // same few L1 sets, and the 32 lanes of a warp, resumed in turn, evict each other at every switch.
  // Consecutive fibers start 9 cache lines apart, through all 64 offsets of a page.
  const std::size_t colour = (fibers_made_++ * 9u % 64u) * 64u;
  auto* rec_addr = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(top) - colour - sizeof(Fiber)) & ~std::uintptr_t{63});
  auto* f = new (rec_addr) Fiber();
  f->stack_lo = static_cast<unsigned char*>(base) + guard;
  f->stack_top = rec_addr;
  f->stack_size = static_cast<std::size_t>(rec_addr - static_cast<unsigned char*>(f->stack_lo));
  f->ctx = fiber_stack_init(f->stack_top, f->stack_size, &fiber_entry);
  return f;
}

Fiber* Sched::pool_get() {
  if (pool_.empty()) return new_fiber();
  Fiber* f = pool_.back();
  pool_.pop_back();
  return f;
}

// A fiber abandoned mid-kernel by a diagnostic is restarted from scratch instead
// of being unwound: its frames belong to a kernel that must not run on.
void Sched::reset_fiber(Fiber* f) {
#if SIMT_ASAN
  __asan_unpoison_memory_region(f->stack_lo, f->stack_size);
#endif
  f->fake_stack = nullptr;
  f->thread = nullptr;
  f->ctx = fiber_stack_init(f->stack_top, f->stack_size, &fiber_entry);
}

void Sched::on_fiber_start() {
#if SIMT_ASAN
  const void* lo = nullptr;
  std::size_t sz = 0;
  __sanitizer_finish_switch_fiber(nullptr, &lo, &sz);
  // The fiber that switched here, when the runtime's switch did (switch_ctx).
  Fiber* const src = std::exchange(switching_from_, nullptr);
  if (src != nullptr && src->is_host) {
    src->stack_lo = const_cast<void*>(lo);
    src->stack_size = sz;
  }
#endif
}

// `data`: where the switch that started this fiber loaded its context from (fiber_switch.h).
void fiber_entry(void* /*data*/) {
  Sched& s = *tl_sched;
  s.on_fiber_start();
  s.fiber_main(s.switching_to_);
}

[[noreturn]] void Sched::abandon(Fiber* self) {
  failed_ = true;
  failed_fiber_ = self;
  switch_to(self, &host_);
  std::fprintf(stderr, "simt: failed fiber resumed\n");
  std::abort();
}

// One call site for both halves of a thread's life: its kernel, then leave_thread, which switches
// to the next thread. A lane resumed by that switch later returns from its kernel to this same
// call site, whose return address the leaving fiber's call has just pushed on the CPU's
// return-stack predictor; and a parked fiber resumed to start a thread returns out of leave_thread
// to it, which the switching lane's call of its kernel pushed. So neither return mispredicts.
// (Leaving inline, without the call, saves instructions but costs time: the kernel's return then
// pops an entry no call pushed, a stale one, and mispredicts.)
[[noreturn]] void Sched::fiber_main(Fiber* self) {
  for (bool leaving = false;; leaving = !leaving) {
    void (*const fn)(void*) = leaving ? &Sched::leave_thread : desc_->invoke;
    void* const arg = leaving ? static_cast<void*>(self) : desc_->pack;
    try {
      fn(arg);
    } catch (...) {
      if (leaving) throw;  // the runtime's own failure, as fatal as before this loop had one site
      failed_ = true;
      exception_ = std::current_exception();
    }
  }
}

// The thread bound to fiber `f` returned from its kernel. Returns when the fiber is to run the
// kernel for its next bound thread. The switch happens in this frame: a lane it resumes must
// find nothing but fiber_main's call on the return-stack predictor.
void Sched::leave_thread(void* f) {
  Sched& s = *tl_sched;
  auto* self = static_cast<Fiber*>(f);
  // The running thread, read from the scheduler (a line every collective reads) rather than from
  // self->thread, the fiber's record at the top of its stack, which the block's other threads have
  // usually evicted since this thread started.
  ThreadRec* t = s.cur_;
  WarpRec& w = *t->wr;
  t->state = State::exited;
  t->fiber = nullptr;
  self->thread = nullptr;
  w.exited |= t->lane_bit;
  w.usual = ~std::uint64_t{0};  // no collective of this warp takes the usual path any more
  ++s.exited_;
  if (s.failed_) s.abandon(self);
  ThreadRec* next = nullptr;
  if (s.at_barrier_ != 0 && s.at_barrier_ + s.exited_ == s.nthreads_) {
    s.release_barrier(self);
    next = s.take_next();
  } else if (t->succ_runs_next(w.runnable_r)) [[likely]] {
    // The usual next thread, the one a rank above in the same warp (ThreadRec::succ): no lower-ranked
    // warp has a runnable lane (take_next_after), and succ is the lowest runnable rank.
    next = t->succ;
    w.runnable_r &= w.runnable_r - 1;
    if (w.runnable_r == 0) s.warp_runnable_r_ &= s.warp_runnable_r_ - 1;  // this warp's bit is the lowest
  } else {
    next = s.take_next();
  }
  if (next == nullptr) {
    if (s.exited_ != s.nthreads_) s.fail_stall(self);
    s.pool_.push_back(self);
    s.switch_to(self, &s.host_);  // block finished; resumed later with a thread bound
    return;
  }
  if (next->fiber != nullptr) s.pool_.push_back(self);
  // A switch ahead, the stack the thread after `next` resumes on (ThreadRec::succ).
  if (const ThreadRec* const after = next->succ) prefetch_stack_top(after->slot.ctx);
  s.transfer(self, next);
}

void Sched::make_order(std::uint64_t phase) {
  for (unsigned i = 0; i < 32; ++i) {
    const auto r = static_cast<std::uint8_t>(cfg_.order == Order::reverse ? 31 - i : i);
    warp_of_rank_[i] = r;  // ranks of missing warps are never set in the masks
  }
  for (WarpRec& w : warps_) {
    for (unsigned i = 0; i < 32; ++i)
      w.lane_of_rank[i] = static_cast<std::uint8_t>(cfg_.order == Order::reverse ? 31 - i : i);
  }
  if (cfg_.order == Order::random) {
    std::uint64_t s = block_seed_ ^ (phase * 0xD1B54A32D192ED03ull);
    auto shuffle = [&](std::uint8_t* a, unsigned n) {
      for (unsigned i = n - 1; i > 0; --i) std::swap(a[i], a[splitmix(s) % (i + 1)]);
    };
    // Permute only the warps and lanes that exist so no empty slot sits first.
    for (unsigned i = 0; i < 32; ++i) warp_of_rank_[i] = static_cast<std::uint8_t>(i);
    shuffle(warp_of_rank_, nwarps_);
    for (WarpRec& w : warps_) shuffle(w.lane_of_rank, static_cast<unsigned>(std::popcount(w.exists)));
  } else if (cfg_.order == Order::reverse) {
    // Keep existing warps/lanes at the low ranks for the same reason.
    for (unsigned i = 0; i < 32; ++i)
      warp_of_rank_[i] = static_cast<std::uint8_t>(i < nwarps_ ? nwarps_ - 1 - i : i);
    for (WarpRec& w : warps_) {
      const unsigned n = static_cast<unsigned>(std::popcount(w.exists));
      for (unsigned i = 0; i < 32; ++i) w.lane_of_rank[i] = static_cast<std::uint8_t>(i < n ? n - 1 - i : i);
    }
  }
  for (unsigned i = 0; i < 32; ++i) rank_of_warp_[warp_of_rank_[i]] = static_cast<std::uint8_t>(i);
  for (WarpRec& w : warps_) {
    for (unsigned i = 0; i < 32; ++i) {
      w.rank_of_lane[w.lane_of_rank[i]] = static_cast<std::uint8_t>(i);
      const unsigned linear = w.base + w.lane_of_rank[i];
      w.by_rank[i] = linear < nthreads_ ? &threads_[linear] : nullptr;  // missing lanes are never runnable
    }
    for (unsigned i = 0; i < 32; ++i) {
      ThreadRec* const t = w.by_rank[i];
      if (t == nullptr) continue;
      t->succ = i + 1 < 32 ? w.by_rank[i + 1] : nullptr;
      t->succ_rank_bit = t->succ != nullptr ? 1u << (i + 1) : 3u;
    }
  }
}

bool Sched::run_block(const LaunchDesc& d, const Config& cfg, std::uint64_t linear_block) {
  desc_ = &d;
  cfg_ = cfg;
  failed_ = false;
  failed_fiber_ = nullptr;
  error_.clear();
  exception_ = nullptr;
  nthreads_ = d.block.x * d.block.y * d.block.z;
  nwarps_ = (nthreads_ + 31) / 32;
  at_barrier_ = 0;
  exited_ = 0;
  phase_ = 0;
  block_seed_ = cfg.seed * 0x9E3779B97F4A7C15ull + linear_block;
  splitmix(block_seed_);

  gridDim = d.grid;
  blockDim = d.block;
  blockIdx = uint3{static_cast<unsigned>(linear_block % d.grid.x),
                   static_cast<unsigned>((linear_block / d.grid.x) % d.grid.y),
                   static_cast<unsigned>(linear_block / (static_cast<std::uint64_t>(d.grid.x) * d.grid.y))};

  // Poisoned at every block start so reads before the staging writes show up. Under memcheck in
  // red zones, poisoned for the hooks at every block start too (a checker's marks may have
  // replaced the shadow).
  const bool guard_smem = d.access_hooks && g_memcheck_launch.load(std::memory_order_relaxed);
  if (!dyn_allocated_ || dyn_size_ != d.dyn_smem_bytes || dyn_guarded_ != guard_smem) {
    if (dyn_guarded_)
      free_guarded_shared(dyn_, dyn_size_);
    else
      std::free(dyn_);
    dyn_ = guard_smem
               ? guarded_shared(d.dyn_smem_bytes)
               : static_cast<unsigned char*>(std::malloc(d.dyn_smem_bytes == 0 ? 0 : d.dyn_smem_bytes));
    dyn_size_ = d.dyn_smem_bytes;
    dyn_allocated_ = true;
    dyn_guarded_ = guard_smem;
  }
  if (dyn_guarded_) poison_guarded_shared(dyn_, dyn_size_);
  fill_poison(dyn_, dyn_size_, cfg.poison);
  static_smem_seen_.clear();
  g_local_poison.store(cfg.poison != 0 ? poison_word(cfg.poison) : 0, std::memory_order_relaxed);
  set_local_poison_site(cfg.poison_site);
  smem_ = dyn_;
  faulting_check_ = cfg.racecheck && !d.access_hooks;
  if (faulting_check_) {  // watched in a page-aligned arena of its own (hazards.h)
    smem_ = hazards_.arena(d.dyn_smem_bytes);
    fill_poison(smem_, d.dyn_smem_bytes, cfg.poison);
    set_current_checker(&hazards_);
    hazards_.begin_block(smem_, d.dyn_smem_bytes, nthreads_, d.block, &current_access_ctx);
  }
  if (tl_access_shadow != nullptr) tl_access_shadow->begin_block(smem_, d.dyn_smem_bytes, d.block, blockIdx);
  smem_watched_ = faulting_check_ || tl_access_shadow != nullptr;
  tl_unwatched_dyn_smem = smem_watched_ ? nullptr : smem_;
  interleaver_ = cfg.interleave && d.access_hooks ? g_interleaver.load(std::memory_order_relaxed) : nullptr;
  if (interleaver_ != nullptr) {
    begin_interleave(block_seed_ ^ 0x5851F42D4C957F2Dull);
    interleaver_->begin_block(this, smem_, d.dyn_smem_bytes);
  }

  threads_.resize(nthreads_);
  warps_.resize(nwarps_);
  for (unsigned w = 0; w < nwarps_; ++w) {
    WarpRec& wr = warps_[w];
    const unsigned n = std::min(32u, nthreads_ - w * 32);
    wr.exists = n == 32 ? kFullMask : (1u << n) - 1;
    wr.exited = 0;
    wr.usual = usual_signature(wr.exists);
    wr.arrived = 0;
    wr.runnable_r = 0;
    wr.base = w * 32;
    wr.syncs = 0;
  }
  // A fixed order's tables depend on the block's shape alone (and point into threads_): blocks of
  // one launch, and launches of one shape, reuse them. Random order differs from block to block.
  // Interleaving reorders warps as it goes: its tables are made afresh, and not kept.
  if (cfg.order == Order::random || interleaver_ != nullptr || ordered_.threads != threads_.data() ||
      ordered_.nthreads != nthreads_ || ordered_.order != cfg.order) {
    make_order(0);
    ordered_ = interleaver_ != nullptr ? OrderKey{} : OrderKey{threads_.data(), nthreads_, cfg.order};
  }
  // A thread's index, warp and lane depend on the block's shape alone: set when it changes. Every
  // thread's fiber is null here (the last block's threads exited, or run_block reset them).
  if (laid_out_.threads != threads_.data() || laid_out_.block.x != d.block.x ||
      laid_out_.block.y != d.block.y || laid_out_.block.z != d.block.z) {
    unsigned linear = 0;
    for (unsigned z = 0; z < d.block.z; ++z) {
      for (unsigned y = 0; y < d.block.y; ++y) {
        for (unsigned x = 0; x < d.block.x; ++x, ++linear) {
          ThreadRec& t = threads_[linear];
          t.fiber = nullptr;
          t.idx = uint3{x, y, z};
          t.warp = static_cast<std::uint16_t>(linear / 32);
          t.lane = static_cast<std::uint8_t>(linear % 32);
          t.lane_bit = 1u << t.lane;
          t.wr = &warps_[t.warp];
        }
      }
    }
    laid_out_ = {threads_.data(), d.block};
  }
  // Every thread runnable: make_order gives the existing warps, and each warp's existing lanes,
  // the lowest ranks.
  for (ThreadRec& t : threads_) t.state = State::runnable;
  for (WarpRec& w : warps_) w.runnable_r = w.exists;  // ranks 0..n-1 of its n lanes: the same low bits
  warp_runnable_r_ = nwarps_ == 32 ? kFullMask : (1u << nwarps_) - 1;

  in_kernel_ = true;
  transfer(&host_, take_next());
  in_kernel_ = false;
  // Back on the host: the block finished or a diagnostic fired.
  tl_unwatched_dyn_smem = nullptr;
  if (faulting_check_) {
    hazards_.end_block(blockIdx);
    set_current_checker(nullptr);
  }
  if (tl_access_shadow != nullptr) tl_access_shadow->end_block();
  if (interleaver_ != nullptr) interleaver_->end_block(smem_, d.dyn_smem_bytes);
  if (!failed_) return true;
  if (failed_fiber_ != nullptr && failed_fiber_->thread == nullptr) {
    reset_fiber(failed_fiber_);
    pool_.push_back(failed_fiber_);
  }
  for (ThreadRec& t : threads_) {
    if (t.fiber != nullptr) {
      reset_fiber(t.fiber);
      pool_.push_back(t.fiber);
      t.fiber = nullptr;
    }
  }
  return false;
}

void Sched::release_barrier(Fiber* self) {
  ThreadRec* first = nullptr;
  int count = 0;
  int all = 1;
  for (ThreadRec& t : threads_) {
    if (t.state != State::at_barrier) continue;
    if (first == nullptr) {
      first = &t;
    } else if ((t.site.file != first->site.file || t.site.line != first->site.line) &&
               !same_site(first->site, t.site)) {
      error_ = fmt::format(
          "{}: divergent __syncthreads: thread {} waits at {} while thread {} waits at {} "
          "[block {}]",
          where(t.site), tid(first->idx), where(first->site), tid(t.idx), where(t.site), tid(blockIdx));
      abandon(self);
    }
    count += t.pred != 0;
    all &= t.pred != 0;
  }
  if (cfg_.strict_barriers && exited_ != 0) [[unlikely]]
    fail_barrier_after_exit(self, *first);
  const int result = first->kind() == Coll::all ? all : (first->kind() == Coll::any ? count != 0 : count);
  at_barrier_ = 0;
  if (tl_access_shadow != nullptr) tl_access_shadow->end_phase();
  ++phase_;
  if (cfg_.order == Order::random) make_order(phase_);
  // Every thread that has not exited waits here and none is runnable, so each warp's runnable
  // ranks are those of its live lanes: all of its ranks (make_order) unless some lane exited.
  for (WarpRec& w : warps_) {
    const unsigned live = w.exists & ~w.exited;
    if (live == 0) continue;
    ThreadRec* lanes = &threads_[w.base];
    for (unsigned m = live; m != 0; m &= m - 1) {
      ThreadRec& t = lanes[std::countr_zero(m)];
      t.state = State::runnable;
      std::memcpy(t.slot.out, &result, sizeof result);
    }
    if (w.exited == 0) {
      w.runnable_r = w.exists;  // ranks 0..n-1 of its n lanes: the same low bits
    } else {
      for (unsigned m = live; m != 0; m &= m - 1) w.runnable_r |= 1u << w.rank_of_lane[std::countr_zero(m)];
    }
    warp_runnable_r_ |= 1u << rank_of_warp_[lanes[0].warp];
  }
}

Hop Sched::arrive_barrier(Site s, int pred, Coll combine) {
  Fiber* self = cur_->fiber;
  ThreadRec& t = *cur_;
  t.state = State::at_barrier;
  t.site = s;
  t.pred = pred;
  t.signature = barrier_signature(combine);
  ++at_barrier_;
  ThreadRec* next = nullptr;
  if (at_barrier_ + exited_ == nthreads_) {
    release_barrier(self);
    next = take_next();
  } else {
    next = take_next_after(*t.wr);
  }
  if (next == nullptr) [[unlikely]]
    fail_stall(self);
  return {&t.slot, prepare(self, next)};
}

bool run_block(const LaunchDesc& d, const Config& cfg, std::uint64_t linear_block, std::string& error,
               std::exception_ptr& exception) {
  Sched& s = sched();
  if (s.run_block(d, cfg, linear_block)) return true;
  error = s.error_;
  exception = s.exception_;
  return false;
}

// Kernel code only runs inside run_block, which created this thread's Sched.
// arrive_barrier's usual case: not the last thread to arrive, and the next to run is in the same
// warp, suspended mid-kernel or not started (a fiber from the pool). The same effects, in a
// function that makes no call; anything else returns a null slot having changed nothing.
inline Hop Sched::arrive_barrier_usual(Site s, int pred, Coll combine) {
  ThreadRec& t = *cur_;
  WarpRec& w = *t.wr;
  const unsigned runnable = w.runnable_r;
  ThreadRec* const next = t.succ;  // the usual guess (ThreadRec::succ), checked before it is used
  if (at_barrier_ + 1 + exited_ == nthreads_ || !t.succ_runs_next(runnable)) [[unlikely]]
    return {nullptr, nullptr};
  Fiber* f = next->fiber;
  void** to = nullptr;
  if (f != nullptr) {
    to = &next->slot.ctx;  // suspended mid-kernel: its context is its thread's
  } else {
    if (pool_.empty()) [[unlikely]]
      return {nullptr, nullptr};
    f = pool_.back();  // parked: its context is its own
    pool_.pop_back();
    // The thread after `next` will take the fiber now at the back: fetch the stack its parked
    // context resumes on (a block ago, it left its last thread there).
    if (!pool_.empty()) prefetch_stack_top(pool_.back()->ctx);
    f->thread = next;
    next->fiber = f;
    to = &f->ctx;
  }
  t.state = State::at_barrier;
  t.site = s;
  t.pred = pred;
  t.signature = barrier_signature(combine);
  ++at_barrier_;
  w.runnable_r = runnable & (runnable - 1);
  if (w.runnable_r == 0) warp_runnable_r_ &= warp_runnable_r_ - 1;  // this warp's bit is the lowest
  next->state = State::running;
  cur_ = next;
  *thread_idx_ = next->idx;
  switching_to_ = f;
  // A switch ahead, the stack the thread after `next` resumes on, if it has started: an unstarted
  // thread's slot holds a stale pointer (ThreadRec::succ).
  if (const ThreadRec* const after = next->succ; after != nullptr && after->fiber != nullptr)
    prefetch_stack_top(after->slot.ctx);
  return {&t.slot, to};
}

Hop barrier_arrive(Site s, int pred, Coll combine) {
  return tl_sched->arrive_barrier_usual(s, pred, combine);
}

Hop barrier_arrive_general(Site s, int pred, Coll combine) {
  return tl_sched->arrive_barrier(s, pred, combine);
}

int barrier_wait(Site s, int pred, Coll combine) {
  Sched& sched = *tl_sched;
  Fiber* self = sched.current_fiber();
  const Hop h = sched.arrive_barrier(s, pred, combine);
  if (h.to != nullptr) sched.suspend_to(self, h);
  int r = 0;
  std::memcpy(&r, h.slot->out, sizeof r);
  return r;
}

unsigned activemask() { return tl_sched->active_mask(); }
void* dynamic_shared(std::size_t elem_bytes) { return tl_sched->dyn_smem(elem_bytes); }
void static_shared(void* p, std::size_t bytes) { tl_sched->static_smem(p, bytes, 1); }
void watch_static_shared(void* p, std::size_t bytes, std::size_t elem) {
  // Memcheck's shadow first: the checkers' marks of the array go over it.
  if (g_memcheck_launch.load(std::memory_order_relaxed)) memcheck_static_shared(p, bytes);
  tl_sched->static_smem(p, bytes, elem);
}

void* Sched::dyn_smem(std::size_t elem) {
  if (smem_watched_) [[unlikely]] {
    if (faulting_check_) hazards_.note_elem(elem);
    if (tl_access_shadow != nullptr) tl_access_shadow->dynamic_shared_elem(elem);
  }
  return smem_;
}

void Sched::static_smem(void* p, std::size_t bytes, std::size_t elem) {
  if (cfg_.poison != 0 &&
      std::find(static_smem_seen_.begin(), static_smem_seen_.end(), p) == static_smem_seen_.end()) {
    static_smem_seen_.push_back(p);
    fill_poison(p, bytes, cfg_.poison);
  }
  if (tl_access_shadow != nullptr) tl_access_shadow->static_shared(p, bytes, elem);  // after the fill
  if (interleaver_ != nullptr) interleaver_->static_shared(p, bytes);
}

HazardReport take_hazards() { return sched().take_hazards(); }

bool running_kernel_thread() { return tl_sched != nullptr && tl_sched->in_kernel(); }
void fail_running_thread(const char* error) { tl_sched->fail_running(error); }

}  // namespace simt::detail
