#include "interleave.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "access_shadow.h"
#include "allocations.h"
#include "fiber_sched.h"
#include "memcheck.h"

namespace simt::detail {

std::atomic<Interleaver*> g_interleaver{nullptr};

namespace {

// Marks [lo, hi) in the access shadow so that every access to it reaches a hook (as the hazard
// checker marks what it watches: a negative shadow byte reports any access to its granule), or
// unmarks it.
void mark(const unsigned char* lo, const unsigned char* hi, bool watched) {
  if (hi <= lo) return;
  const auto shadow = [](const unsigned char* p) {
    return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(p) >> 3) + kShadowOffset);
  };
  std::memset(shadow(lo), watched ? 0xF8 : 0, static_cast<std::size_t>(shadow(hi - 1) - shadow(lo)) + 1);
  if (!watched) restore_guarded_shadow(lo, hi);  // memcheck's shadow of the memory, if it has one
}

}  // namespace

namespace {
thread_local unsigned tl_baton_id = 0;  // the calling host thread's turn in its launch's Baton
}  // namespace

std::vector<std::uint64_t> interleaved_block_order(std::uint64_t nblocks, std::uint64_t seed) {
  std::vector<std::uint64_t> order(nblocks);
  for (std::uint64_t i = 0; i < nblocks; ++i) order[i] = i;
  std::uint64_t s = seed ^ 0xA0761D6478BD642Full;
  for (std::uint64_t i = nblocks - 1; i > 0; --i) std::swap(order[i], order[splitmix(s) % (i + 1)]);
  return order;
}

void Baton::join() {
  std::unique_lock lock(m_);
  tl_baton_id = joined_++;
  if (joined_ == left_.size()) wake_[holder_].notify_one();
  wake_[tl_baton_id].wait(lock, [&] { return joined_ == left_.size() && holder_ == tl_baton_id; });
}

bool Baton::pass(std::uint64_t pick) {
  std::unique_lock lock(m_);
  const auto n = static_cast<unsigned>(left_.size());
  unsigned others = 0;
  for (unsigned i = 0; i < n; ++i) others += i != tl_baton_id && left_[i] == 0;
  if (others == 0) return false;
  auto k = static_cast<unsigned>(pick % others);
  for (unsigned i = 0; i < n; ++i) {
    if (i == tl_baton_id || left_[i] != 0) continue;
    if (k-- == 0) {
      holder_ = i;
      break;
    }
  }
  wake_[holder_].notify_one();
  wake_[tl_baton_id].wait(lock, [&] { return holder_ == tl_baton_id; });
  return true;
}

void Baton::leave() {
  std::lock_guard lock(m_);
  const auto n = static_cast<unsigned>(left_.size());
  left_[tl_baton_id] = 1;
  for (unsigned step = 1; step < n; ++step) {
    const unsigned i = (tl_baton_id + step) % n;
    if (left_[i] == 0) {
      holder_ = i;
      break;
    }
  }
  wake_[holder_].notify_one();
}

void Interleaver::watch(unsigned char* lo, unsigned char* hi, bool global) {
  launch_ranges_.push_back({lo, hi, global});
  mark(lo, hi, true);
}

bool Interleaver::is_global(const unsigned char* p) const {
  return std::any_of(launch_ranges_.begin(), launch_ranges_.end(),
                     [&](const Range& r) { return r.global && p >= r.lo && p < r.hi; });
}

void Interleaver::begin_launch(const LaunchDesc& d, Baton* baton) {
  baton_ = baton;
  for (const auto& [alloc, arg] : argument_allocations(d, false)) {
    const bool seen = std::any_of(launch_ranges_.begin(), launch_ranges_.end(),
                                  [&](const Range& r) { return r.lo == alloc.base; });
    if (!seen) watch(alloc.base, alloc.base + alloc.bytes, true);
  }
}

void Interleaver::end_launch() {
  settle();
  for (const Range& r : launch_ranges_) mark(r.lo, r.hi, false);
  launch_ranges_.clear();
  baton_ = nullptr;
}

void Interleaver::begin_block(Sched* sched, unsigned char* smem, std::size_t bytes) {
  sched_ = sched;
  smem_lo_ = smem;
  smem_hi_ = smem + bytes;
  mark(smem, smem + bytes, true);
  // No thread of the block has made an atomic yet: an earlier block's or launch's last atomic
  // (at an address a new buffer may now occupy) must not make a plain load count as one.
  g_atomic_target = nullptr;
}

void Interleaver::end_block(unsigned char* smem, std::size_t bytes) {
  settle();
  mark(smem, smem + bytes, false);
}

void Interleaver::static_shared(void* p, std::size_t bytes) {
  auto* lo = static_cast<unsigned char*>(p);
  const bool seen =
      std::any_of(launch_ranges_.begin(), launch_ranges_.end(), [&](const Range& r) { return r.lo == lo; });
  if (!seen) watch(lo, lo + bytes, false);
}

void Interleaver::settle_stale_load() {
  if (std::memcmp(at_, stale_, size_) == 0) std::memcpy(at_, newer_, size_);
  at_ = nullptr;
}

void Interleaver::on_access(const void* addr, std::size_t bytes, bool write, const void* site) {
  settle();
  Sched& s = *sched_;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(addr));
  // Another block first, else another thread of this block. Blocks hand over at loads of global
  // memory only: nothing else of this block's reaches another block, and a store between blocks
  // changes nothing the shuffled block order does not (a hand-over wakes another host thread:
  // the stores of a kernel's outputs would cost one each).
  const unsigned char *smem_lo = smem_lo_, *smem_hi = smem_hi_;
  const bool handover =
      baton_ != nullptr && !write && (p < smem_lo || p >= smem_hi) && is_global(p) && s.handover_coin();
  // The site as an offset in this module, the same wherever it is loaded.
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(site) - reinterpret_cast<std::uintptr_t>(&mark);
  if (!handover && !s.yield_coin(at)) return;  // most accesses: no switch, nothing to keep
  const ThreadRec& t = *s.current_thread();
  // The running thread's last atomic, which the threads that run meanwhile overwrite.
  const void* const atomic_target = g_atomic_target;
  const std::uint32_t atomic_thread = g_atomic_thread;
  const bool atomic = addr == atomic_target && t.warp * 32u + t.lane == atomic_thread;
  const bool may_be_stale = !write && !atomic && bytes <= sizeof stale_;
  unsigned char before[sizeof stale_];
  if (may_be_stale) std::memcpy(before, p, bytes);
  bool switched = false;
  if (handover && baton_->pass(s.interleave_draw())) {
    switched = true;
    sched_ = &s;  // the host threads that ran meanwhile set their own
    smem_lo_ = smem_lo;
    smem_hi_ = smem_hi;
  } else {
    // No other host thread is left: the block's own coin decides, as at any other access.
    switched = (!handover || s.yield_coin(at)) && s.yield_now();
  }
  if (!switched) return;
  g_atomic_target = atomic_target;
  g_atomic_thread = atomic_thread;
  if (!may_be_stale || std::memcmp(p, before, bytes) == 0) return;
  settle();  // a stale load of a thread that ran meanwhile and left without another hooked access
  at_ = p;
  size_ = bytes;
  std::memcpy(newer_, p, bytes);
  std::memcpy(stale_, before, bytes);
  std::memcpy(p, before, bytes);
}

// Suspends the running thread (it stays runnable) and runs another runnable thread of the block,
// both chosen by the block's interleave generator. The scheduler's fast paths take the next thread
// from the running thread's warp, relying on no runnable warp ranking below it (fiber_sched.h
// take_next_after): the chosen thread's warp swaps ranks with the lowest-ranked runnable one.
std::uint32_t Sched::tosses_to_heads(unsigned bits) {
  assert(bits == 1 || bits == 3 || bits == 6);
  // Each group of `bits` bits of a draw is a toss, heads where all of them are zero; the lowest
  // bit of each whole group marks it.
  const unsigned per_draw = 64 / bits;
  const std::uint64_t group_starts = bits == 1   ? ~std::uint64_t{0}
                                     : bits == 3 ? 0x1249249249249249   // every third bit
                                                 : 0x0041041041041041;  // every sixth, ten groups
  for (std::uint32_t tosses = 0;; tosses += per_draw) {
    const std::uint64_t x = interleave_draw();
    std::uint64_t ones = x;
    for (unsigned k = 1; k < bits; ++k) ones |= x >> k;
    const std::uint64_t heads = ~ones & group_starts;
    if (heads != 0) return tosses + static_cast<std::uint32_t>(std::countr_zero(heads)) / bits + 1;
  }
}

bool Sched::yield_now() {
  if (warp_runnable_r_ == 0) return false;
  // A runnable warp, then a runnable lane of it (the running thread is in neither mask).
  const auto nth_bit = [](unsigned m, unsigned n) {
    for (; n != 0; --n) m &= m - 1;
    return static_cast<unsigned>(std::countr_zero(m));
  };
  const auto to_rank = static_cast<std::uint8_t>(
      nth_bit(warp_runnable_r_, interleave_below(static_cast<unsigned>(std::popcount(warp_runnable_r_)))));
  WarpRec* to_warp = &warps_[warp_of_rank_[to_rank]];
  const unsigned rank = nth_bit(to_warp->runnable_r,
                                interleave_below(static_cast<unsigned>(std::popcount(to_warp->runnable_r))));
  ThreadRec& t = *cur_;
  Fiber* self = t.fiber;
  set_runnable(t);
  const auto to_index = static_cast<std::uint8_t>(to_warp - warps_.data());
  const auto lowest = static_cast<std::uint8_t>(std::countr_zero(warp_runnable_r_));
  if (to_rank != lowest) {  // both ranks have runnable lanes: warp_runnable_r_ stays as it is
    const std::uint8_t low_warp = warp_of_rank_[lowest];
    warp_of_rank_[lowest] = to_index;
    warp_of_rank_[to_rank] = low_warp;
    rank_of_warp_[to_index] = lowest;
    rank_of_warp_[low_warp] = to_rank;
  }
  to_warp->runnable_r &= ~(1u << rank);
  if (to_warp->runnable_r == 0) warp_runnable_r_ &= ~(1u << lowest);
  // `next` is another thread than the running one, so prepare() hands back a context to resume.
  suspend_to(self, Hop{&t.slot, prepare(self, to_warp->by_rank[rank])});
  return true;
}

}  // namespace simt::detail
