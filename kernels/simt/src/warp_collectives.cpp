// Warp collectives of the fiber scheduler: __syncwarp, shuffles and votes. Each lane arrives and
// suspends (kernel code makes the switch itself, simt_cpu.h), and the last lane of the mask
// resolves every lane's result at once (resolve); the checks of a collective's arguments and of
// lanes that disagree live here too (their findings are worded in sync_findings.cpp).
#include <bit>
#include <cstring>
#include <string>

#include "fiber_sched.h"

namespace simt::detail {

namespace {
// Fixed-size copies for the common sizes keep memcpy calls out of the hot path.
inline void copy_value(void* dst, const void* src, unsigned size) {
  switch (size) {
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    case 16: std::memcpy(dst, src, 16); break;
    default: std::memcpy(dst, src, size); break;
  }
}
}  // namespace

// The general arrival: checks every argument, copies a value of any size, and hands over to a
// thread of any state. warp_arrive() comes here for everything but its usual case.
inline Hop Sched::arrive_collective(Site s, std::uint64_t mask_kind_size, const void* in,
                                    std::uint64_t b_width) {
  ThreadRec& t = *cur_;
  Fiber* self = t.fiber;
  WarpRec& w = *t.wr;
  const unsigned mask = static_cast<unsigned>(mask_kind_size);
  const int width = static_cast<int>(b_width >> 32);
  const unsigned me = 1u << t.lane;
  const unsigned live = w.exists & ~w.exited;
  if ((mask & me) == 0 || (mask & ~live) != 0 || static_cast<unsigned>(width - 1) >= 32u ||
      (width & (width - 1)) != 0) [[unlikely]] {
    fail_args(self, s, mask_kind_size, width);
  }
  const unsigned size = static_cast<unsigned>(mask_kind_size >> 40 & 0xffu);
  t.state = State::at_warp;
  t.signature = signature_of(mask_kind_size, static_cast<unsigned>(width));
  t.b = static_cast<int>(b_width);
  t.site = s;
  if (size != 0) copy_value(t.in, in, size);
  w.arrived |= me;
  if ((w.arrived & mask) != mask && w.runnable_r != 0) return hand_over(t, take_from(w));
  return complete_arrival(t, w, mask);
}

// The usual arrival: a collective of the whole warp (its mask is every lane of the warp, none has
// exited, width 32), its value in `lo` and `hi`, reached by a lane that is not the last to arrive,
// handing over to the next lane of its warp, already suspended mid-kernel. The same effects as
// arrive_collective's, in a leaf function (no frame, no callee-saved register). Everything else
// (every argument that arrive_collective would refuse among it) returns a null slot before any
// state changes, and the kernel calls collective_arrive_general (simt_cpu.h).
inline Hop Sched::arrive_usual(Site s, std::uint64_t signature, std::uint64_t lo, std::uint64_t hi,
                               std::uint64_t b_width) {
  ThreadRec& t = *cur_;
  // The arguments are recorded first, so that few values stay live: if this turns out not to be
  // the usual case, arrive_collective records the same again, and nothing reads them before.
  // Sixteen bytes whatever the size: resolve reads only the first `size` of them.
  std::memcpy(t.in, &lo, 8);
  std::memcpy(t.in + 8, &hi, 8);
  t.signature = signature;
  t.b = static_cast<int>(b_width);
  t.site = s;
  WarpRec& w = *t.wr;
  const unsigned arrived = w.arrived | t.lane_bit;
  const unsigned runnable = w.runnable_r;
  // The next thread is the warp's lowest-ranked runnable lane; usually the one a rank above this
  // one (ThreadRec::succ says why it is read from here).
  ThreadRec* const next = t.succ;
  // Mask, width and exits in one test (WarpRec::usual); then not the last lane, and the guess is
  // the lowest runnable rank.
  if ((signature & kUsualSigBits) != w.usual || arrived == w.exists || !t.succ_runs_next(runnable))
      [[unlikely]]
    return {nullptr, nullptr};
  // A lane that is not running and has a fiber is suspended mid-kernel: another thread's fiber.
  // The switch is the kernel's own (fiber_hop.h), which reads no switching_to_.
  if (next->fiber == nullptr) [[unlikely]]
    return {nullptr, nullptr};
  t.state = State::at_warp;
  w.arrived = arrived;
  w.runnable_r = runnable & (runnable - 1);
  if (w.runnable_r == 0) warp_runnable_r_ &= warp_runnable_r_ - 1;  // this warp's bit is the lowest
  next->state = State::running;
  cur_ = next;
  *thread_idx_ = next->idx;
  // A switch ahead, the stack the thread after `next` resumes on (ThreadRec::succ).
  if (const ThreadRec* const after = next->succ) prefetch_stack_top(after->slot.ctx);
  return {&t.slot, &next->slot.ctx};
}

Hop Sched::hand_over(ThreadRec& t, ThreadRec* next) { return {&t.slot, prepare(t.fiber, next)}; }

Hop Sched::complete_arrival(ThreadRec& t, WarpRec& w, unsigned mask) {
  Fiber* self = t.fiber;
  if ((w.arrived & mask) == mask) resolve(self, w, mask);
  ThreadRec* next = take_next_after(w);
  if (next == nullptr) [[unlikely]]
    fail_stall(self);
  return {&t.slot, prepare(self, next)};
}

namespace {

int shuffle_source_any(Coll kind, int lane, int b, int segmask) {
  switch (kind) {
    case Coll::shfl_up: return shuffle_source<Coll::shfl_up>(lane, b, segmask);
    case Coll::shfl_down: return shuffle_source<Coll::shfl_down>(lane, b, segmask);
    case Coll::shfl_xor: return shuffle_source<Coll::shfl_xor>(lane, b, segmask);
    default: return shuffle_source<Coll::shfl_idx>(lane, b, segmask);
  }
}

// Every lane of `mask`'s source in step `step` of a fused loop of shuffles of `kind`, lane l's
// operand being b[l][step]; returns the first lane whose source is outside `mask`, or -1.
template <Coll kind>
int fill_sources(std::uint8_t* src, unsigned mask, const int* const* b, int step, int segmask) {
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    const int j = shuffle_source<kind>(l, b[l][step], segmask);
    if ((mask & (1u << j)) == 0) [[unlikely]]
      return l;
    src[l] = static_cast<std::uint8_t>(j);
  }
  return -1;
}

// The same for a full warp whose lanes all have operand `b` at a width under 32 (at 32 the step
// function finds the sources itself): every source is in the mask, so one straight loop with
// nothing to check.
template <Coll kind>
void fill_sources_full(std::uint8_t* src, int b, int segmask) {
  for (int l = 0; l < 32; ++l) src[l] = static_cast<std::uint8_t>(shuffle_source<kind>(l, b, segmask));
}

// One step's source table for a loop of shuffles of `kind`: fill_sources_full when the mask is the
// full warp and every lane has the first lane's operands (`same`), fill_sources otherwise.
int fill_sources_any(Coll kind, bool same, std::uint8_t* src, unsigned mask, const int* const* b, int step,
                     int segmask) {
  if (same && mask == kFullMask) {
    switch (kind) {
      case Coll::shfl_up: fill_sources_full<Coll::shfl_up>(src, b[0][step], segmask); break;
      case Coll::shfl_down: fill_sources_full<Coll::shfl_down>(src, b[0][step], segmask); break;
      case Coll::shfl_xor: fill_sources_full<Coll::shfl_xor>(src, b[0][step], segmask); break;
      default: fill_sources_full<Coll::shfl_idx>(src, b[0][step], segmask); break;
    }
    return -1;
  }
  switch (kind) {
    case Coll::shfl_up: return fill_sources<Coll::shfl_up>(src, mask, b, step, segmask);
    case Coll::shfl_down: return fill_sources<Coll::shfl_down>(src, mask, b, step, segmask);
    case Coll::shfl_xor: return fill_sources<Coll::shfl_xor>(src, mask, b, step, segmask);
    default: return fill_sources<Coll::shfl_idx>(src, mask, b, step, segmask);
  }
}

// Every lane's result of one shuffle. One instantiation per kind and common size keeps both
// decisions out of the per-lane loop. Returns the first lane that reads a lane outside `mask` (its
// source in `src`), or null.
template <Coll kind, unsigned kSize>
ThreadRec* shuffle(ThreadRec* lanes, unsigned mask, int width, unsigned size, int& src) {
  const int segmask = (32 - width) & 31;
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const int lane = std::countr_zero(m);
    ThreadRec& me = lanes[lane];
    const int j = shuffle_source<kind>(lane, me.b, segmask);
    if ((mask & (1u << j)) == 0) [[unlikely]] {
      src = j;
      return &me;
    }
    std::memcpy(me.slot.out, lanes[j].in, kSize != 0 ? kSize : size);
  }
  return nullptr;
}

// The same for the usual case, every lane of a full warp at width 32: no segments, no lane outside
// the mask, so each lane's source is a line of index arithmetic (shuffle_source at segment mask
// 0). The same pass compares every lane's signature with `sig`: nonzero when some lane reached
// another collective (resolve then names it, and no lane reads what this wrote).
template <Coll kind, unsigned kSize>
std::uint64_t shuffle_full_warp(ThreadRec* lanes, std::uint64_t sig) {
  std::uint64_t differ = 0;
  for (int lane = 0; lane < 32; ++lane) {
    differ |= lanes[lane].signature ^ sig;
    const int j = shuffle_source<kind>(lane, lanes[lane].b, 0);
    std::memcpy(lanes[lane].slot.out, lanes[j].in, kSize);
  }
  return differ;
}

// Every lane's signature compared with `sig` alone, for a full warp without a full-warp shuffle.
std::uint64_t differ_full_warp(const ThreadRec* lanes, std::uint64_t sig) {
  std::uint64_t differ = 0;
  for (int l = 0; l < 32; ++l) differ |= lanes[l].signature ^ sig;
  return differ;
}

// Returns false when the case has no full-warp instantiation (a value size other than 4 or 8).
template <Coll kind>
bool shuffle_full_warp_sized(ThreadRec* lanes, unsigned size, std::uint64_t sig, std::uint64_t& differ) {
  switch (size) {
    case 4: differ = shuffle_full_warp<kind, 4>(lanes, sig); return true;
    case 8: differ = shuffle_full_warp<kind, 8>(lanes, sig); return true;
    default: return false;
  }
}

// A full warp's shuffle at width 32 of a 4- or 8-byte value, with the signatures compared in the
// same pass (`differ`); false, having done neither, for any other collective.
bool shuffle_full_warp_any(Coll kind, ThreadRec* lanes, unsigned size, std::uint64_t sig,
                           std::uint64_t& differ) {
  switch (kind) {
    case Coll::shfl_up: return shuffle_full_warp_sized<Coll::shfl_up>(lanes, size, sig, differ);
    case Coll::shfl_down: return shuffle_full_warp_sized<Coll::shfl_down>(lanes, size, sig, differ);
    case Coll::shfl_xor: return shuffle_full_warp_sized<Coll::shfl_xor>(lanes, size, sig, differ);
    case Coll::shfl_idx: return shuffle_full_warp_sized<Coll::shfl_idx>(lanes, size, sig, differ);
    default: return false;
  }
}

template <Coll kind>
ThreadRec* shuffle_sized(ThreadRec* lanes, unsigned mask, int width, unsigned size, int& src) {
  switch (size) {
    case 4: return shuffle<kind, 4>(lanes, mask, width, size, src);
    case 8: return shuffle<kind, 8>(lanes, mask, width, size, src);
    default: return shuffle<kind, 0>(lanes, mask, width, size, src);
  }
}

ThreadRec* shuffle_any(Coll kind, ThreadRec* lanes, unsigned mask, int width, unsigned size, int& src) {
  switch (kind) {
    case Coll::shfl_up: return shuffle_sized<Coll::shfl_up>(lanes, mask, width, size, src);
    case Coll::shfl_down: return shuffle_sized<Coll::shfl_down>(lanes, mask, width, size, src);
    case Coll::shfl_xor: return shuffle_sized<Coll::shfl_xor>(lanes, mask, width, size, src);
    default: return shuffle_sized<Coll::shfl_idx>(lanes, mask, width, size, src);
  }
}

}  // namespace

// Completes a collective once every lane of `mask` has arrived.
void Sched::resolve(Fiber* self, WarpRec& w, unsigned mask) {
  ThreadRec* lanes = &threads_[w.base];
  const ThreadRec& ref = *cur_;
  const bool full_warp = mask == kFullMask;
  std::uint64_t differ = 0;
  // The usual case, a full warp: one pass without branches (the shuffle's own, for a shuffle at
  // width 32), the loop below only to name the lane.
  bool shuffled = false;
  if (full_warp) {
    shuffled =
        ref.width() == 32 && shuffle_full_warp_any(ref.kind(), lanes, ref.size(), ref.signature, differ);
    if (!shuffled) differ = differ_full_warp(lanes, ref.signature);
  }
  for (unsigned m = differ != 0 || !full_warp ? mask : 0; m != 0; m &= m - 1) {
    const ThreadRec& o = lanes[std::countr_zero(m)];
    if (o.signature != ref.signature) [[unlikely]] {
      error_ = fmt::format(
          "{}: lanes of mask {:#010x} reached different warp collectives: lane {} at {} {} "
          "(mask {:#010x}), lane {} at {} {} (mask {:#010x}){}",
          where(ref.site), mask, ref.lane, coll_name(ref.kind()), where(ref.site), ref.mask(), o.lane,
          coll_name(o.kind()), where(o.site), o.mask(), ctx_suffix(ref));
      abandon(self);
    }
  }
  const Coll kind = ref.kind();
  if (kind == Coll::ballot || kind == Coll::any || kind == Coll::all) {
    unsigned ballot = 0;
    for (unsigned m = mask; m != 0; m &= m - 1) {
      const int l = std::countr_zero(m);
      int pred = 0;
      std::memcpy(&pred, lanes[l].in, sizeof pred);
      if (pred != 0) ballot |= 1u << l;
    }
    const unsigned r = kind == Coll::ballot ? ballot : (kind == Coll::any ? ballot != 0 : ballot == mask);
    for (unsigned m = mask; m != 0; m &= m - 1)
      std::memcpy(lanes[std::countr_zero(m)].slot.out, &r, sizeof r);
  } else if (kind == Coll::fold) {
    resolve_fold(self, w, lanes, mask);
  } else if (kind != Coll::syncwarp && !shuffled) {
    int src = 0;
    if (ThreadRec* bad = shuffle_any(kind, lanes, mask, ref.width(), ref.size(), src)) [[unlikely]]
      fail_source(self, *bad, kind, src, mask);
  }
  w.arrived &= ~mask;
  ++w.syncs;
  if (mask == w.exists) {
    // The whole warp, the usual case: its lanes hold ranks 0..n-1 (make_order) and none of them was
    // runnable. They stay State::at_warp until transfer() runs them; only a stall reads the state,
    // and nothing stalls while they are runnable.
    if (w.runnable_r == 0) warp_runnable_r_ |= 1u << rank_of_warp_[ref.warp];
    w.runnable_r = mask;  // ranks 0..n-1 of its n lanes: the same low bits as the lanes themselves
  } else {
    for (unsigned m = mask; m != 0; m &= m - 1) set_runnable(lanes[std::countr_zero(m)]);
  }
}

namespace {
// Whether two lanes' operands of a fused loop are the same: whole arrays, zero past the last step
// (FoldSteps::b), compared a word at a time with no branch.
bool same_operands(const int* a, const int* b) {
  static_assert(FoldSteps::kMax % 2 == 0);
  std::uint64_t differ = 0;
  for (int i = 0; i < FoldSteps::kMax; i += 2) {
    std::uint64_t x = 0;
    std::uint64_t y = 0;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    differ |= x ^ y;
  }
  return differ == 0;
}

const FoldLane& fold_of(const ThreadRec& t) {
  const FoldLane* f = nullptr;
  std::memcpy(&f, t.in + 8, sizeof f);  // shfl_fold's layout: the value, then its FoldLane
  return *f;
}
}  // namespace

// A fused shuffle loop (shfl_fold, simt_cpu.h): every step of it for every lane of `mask`, each
// step reading the values of the step before. Every lane must have run the same loop (as many
// steps, the same shuffle and body); each lane's source follows its own operand.
void Sched::resolve_fold(Fiber* self, WarpRec& w, ThreadRec* lanes, unsigned mask) {
  const ThreadRec& ref = *cur_;
  const FoldLane& first = fold_of(ref);
  const int steps = first.steps->n;
  const int segmask = (32 - ref.width()) & 31;
  alignas(8) unsigned char value[2][32][8];
  const int* b[32];  // each lane's operands, one per step
  bool same = true;  // every lane's operands are the first lane's: one operand per step
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    const FoldLane& f = fold_of(lanes[l]);
    if (f.steps->n != steps || f.shuffle != first.shuffle || f.step != first.step) [[unlikely]] {
      error_ = fmt::format(
          "{}: lanes of mask {:#010x} ran different shuffle loops: lane {} {} steps of {} at {}, lane {} {} "
          "steps of {} at {}{}",
          where(ref.site), mask, ref.lane, steps, coll_name(first.shuffle), where(ref.site), l, f.steps->n,
          coll_name(f.shuffle), where(lanes[l].site), ctx_suffix(ref));
      abandon(self);
    }
    b[l] = f.steps->b;
    same &= same_operands(f.steps->b, first.steps->b);
    std::memcpy(value[0][l], lanes[l].in, 8);
  }
  int cur = 0;
  std::uint8_t src[32];
  const bool usual = same && mask == kFullMask && segmask == 0;  // the step function finds the sources
  for (int step = 0; step < steps; ++step, cur ^= 1) {
    if (usual) {
      first.step(first.body, value[cur ^ 1], value[cur], nullptr, mask, b[0][step]);
      continue;
    }
    if (const int bad = fill_sources_any(first.shuffle, same, src, mask, b, step, segmask); bad >= 0)
        [[unlikely]]
      fail_source(self, lanes[bad], first.shuffle,
                  shuffle_source_any(first.shuffle, bad, b[bad][step], segmask), mask);
    first.step(first.body, value[cur ^ 1], value[cur], src, mask, 0);
  }
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    std::memcpy(lanes[l].slot.out, value[cur][l], 8);
  }
  // The hazard checker orders lanes by the collectives their warp completed: as many as the loop's.
  w.syncs += static_cast<std::uint32_t>(steps - 1);
}

Hop warp_arrive(Site s, std::uint64_t signature, std::uint64_t lo, std::uint64_t hi, std::uint64_t b_width) {
  return tl_sched->arrive_usual(s, signature, lo, hi, b_width);
}

Hop collective_arrive_general(Site s, std::uint64_t mask_kind_size, const void* in, std::uint64_t b_width) {
  return tl_sched->arrive_collective(s, mask_kind_size, in, b_width);
}

void collective(Site s, std::uint64_t mask_kind_size, const void* in, void* out, std::uint64_t b_width) {
  Sched& sched = *tl_sched;
  Fiber* self = sched.current_fiber();
  const Hop h = sched.arrive_collective(s, mask_kind_size, in, b_width);
  if (h.to != nullptr) sched.suspend_to(self, h);
  if (const unsigned size = static_cast<unsigned>(mask_kind_size >> 40 & 0xffu); size != 0)
    copy_value(out, h.slot->out, size);
}

}  // namespace simt::detail
