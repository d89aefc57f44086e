// The scheduler's synccheck findings (docs/simt.md, "Synccheck"): why a block cannot go on at a
// barrier or a warp collective, worded with the call site, the block and the threads. Each stops
// the block (abandon); runtime.cpp and warp_collectives.cpp call them where they find it.
#include <bit>
#include <string>

#include "fiber_sched.h"

namespace simt::detail {

void Sched::fail_args(Fiber* self, Site s, std::uint64_t mask_kind_size, int width) {
  const ThreadRec& t = *cur_;
  const WarpRec& w = warps_[t.warp];
  const unsigned mask = static_cast<unsigned>(mask_kind_size);
  const Coll kind = static_cast<Coll>(mask_kind_size >> 32 & 0xffu);
  if ((mask & (1u << t.lane)) == 0) {
    error_ = fmt::format("{}: {} called by lane {} which is not in its mask {:#010x}{}", where(s),
                         coll_name(kind), t.lane, mask, ctx_suffix(t));
  } else if (unsigned gone = mask & ~w.exists) {
    error_ = fmt::format("{}: {} mask {:#010x} names lane {} which does not exist (block has {} threads){}",
                         where(s), coll_name(kind), mask, std::countr_zero(gone), nthreads_, ctx_suffix(t));
  } else if (unsigned bad = mask & w.exited) {
    error_ = fmt::format("{}: {} mask {:#010x} names lane {} which exited{}", where(s), coll_name(kind), mask,
                         std::countr_zero(bad), ctx_suffix(t));
  } else {
    error_ = fmt::format("{}: {} width {} is not a power of two in [1, 32]{}", where(s), coll_name(kind),
                         width, ctx_suffix(t));
  }
  abandon(self);
}

void Sched::fail_source(Fiber* self, const ThreadRec& t, Coll kind, int src, unsigned mask) {
  error_ = fmt::format("{}: {} lane {} reads lane {} which is not in mask {:#010x} (undefined on the GPU){}",
                       where(t.site), coll_name(kind), t.lane, src, mask, ctx_suffix(t));
  abandon(self);
}

void Sched::fail_stall(Fiber* self) {
  error_ = stall_message();
  abandon(self);
}

// Strict mode's finding (docs/simt.md, synccheck): a GPU releases a barrier that only exited
// threads hold up, so this is no error without it.
void Sched::fail_barrier_after_exit(Fiber* self, const ThreadRec& waiting) {
  const ThreadRec* gone = &threads_.front();
  while (gone->state != State::exited) ++gone;
  error_ = fmt::format(
      "{}: divergent __syncthreads: thread {} waits here, but {} of the block's {} threads exited without "
      "reaching it (thread {} first) (strict mode) [block {}]",
      where(waiting.site), tid(waiting.idx), exited_, nthreads_, tid(gone->idx), tid(blockIdx));
  abandon(self);
}

std::string Sched::stall_message() {
  // A collective naming a lane that exited is the most specific explanation.
  for (const ThreadRec& t : threads_) {
    if (t.state != State::at_warp) continue;
    const WarpRec& w = warps_[t.warp];
    if (unsigned bad = t.mask() & w.exited) {
      return fmt::format("{}: {} mask {:#010x} names lane {} which exited{}", where(t.site),
                         coll_name(t.kind()), t.mask(), std::countr_zero(bad), ctx_suffix(t));
    }
  }
  const ThreadRec* at_warp = nullptr;
  const ThreadRec* at_bar = nullptr;
  for (const ThreadRec& t : threads_) {
    if (t.state == State::at_warp && at_warp == nullptr) at_warp = &t;
    if (t.state == State::at_barrier && at_bar == nullptr) at_bar = &t;
  }
  if (at_warp != nullptr && at_bar != nullptr) {
    return fmt::format(
        "{}: deadlock: thread {} waits at {} (mask {:#010x}) while thread {} waits at __syncthreads {} "
        "[block {}]",
        where(at_warp->site), tid(at_warp->idx), coll_name(at_warp->kind()), at_warp->mask(),
        tid(at_bar->idx), where(at_bar->site), tid(blockIdx));
  }
  if (at_warp != nullptr) {
    const WarpRec& w = warps_[at_warp->warp];
    return fmt::format("{}: deadlock: {} mask {:#010x} never completes (lanes waiting: {:#010x}){}",
                       where(at_warp->site), coll_name(at_warp->kind()), at_warp->mask(), w.arrived,
                       ctx_suffix(*at_warp));
  }
  return fmt::format("deadlock in block {}", tid(blockIdx));
}

}  // namespace simt::detail
