// Interleaving at memory operations (Config::interleave) for kernels built with access hooks
// (driftscope_add_simt_kernel(... CHECKED)).
//
// The fiber scheduler switches threads only at barriers, warp collectives and exits, so a
// read-modify-write that several threads of a block make without an atomic (`sum += v`) never
// loses an update on it. Under this schedule the memory a launch writes (the allocations its
// writable pointer arguments point into, the block's dynamic shared memory, each static __shared__
// array a thread reaches) is marked in the access shadow, so every load and store of it reaches a
// hook first (access_hooks.cpp). There a coin (seeded by Config::seed and the block; its odds fall
// at an instruction the block has reached often, fiber_sched.h yield_coin) decides whether the
// thread is suspended and another runnable thread of the block, chosen by the same generator,
// runs first (Sched::yield_now).
//
// A suspended load reads what the memory held when its thread was suspended: the instrumentation
// checks the load of `x += v` but not the store that follows it in the same basic block (GCC), so
// a switch before the load alone would let the whole read-modify-write run after the others and
// hide the lost update. On resuming, a load whose bytes other threads changed meanwhile is given
// the old bytes, and the newer ones are put back at the next hooked access (of any thread) or the
// block's end, unless the thread has overwritten the old bytes by then: the load happened before
// the others ran, its thread's store after them. Atomics (simt_cpu.h's atomic_at) are never given
// old bytes. What that adds up to is a schedule a GPU can run, so a race-free kernel computes the
// same bits under it.
//
// Blocks: a launch of more than one block runs on up to kInterleavedHostThreads host threads that
// take turns (Baton), its blocks handed out in an order shuffled by the seed, so at a hooked
// load of global memory a second coin may hand over to another host thread, which runs its own
// block (its own static __shared__ arrays, thread_local per host thread, and its own dynamic
// shared memory) until it hands over in turn or runs out of blocks. Only loads hand over: between
// blocks a store changes nothing the shuffled order does not. One scheduler runs one block
// at a time, and a host thread's static __shared__ arrays are one block's: blocks are interleaved
// only across host threads, so at most that many are under way at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "simt/simt_cpu.h"

namespace simt::detail {

class Sched;

// Host threads that run the blocks of an interleaved launch (at most this many at once).
constexpr unsigned kInterleavedHostThreads = 4;

// The order an interleaved launch hands its blocks out in: a permutation of [0, nblocks) drawn
// from `seed`. Blocks of a launch are independent, so a race-free kernel gives the same bits in
// any order (cross-block float atomics aside).
std::vector<std::uint64_t> interleaved_block_order(std::uint64_t nblocks, std::uint64_t seed);

// The host threads running the blocks of one interleaved launch, one at a time: only the holder
// runs, and the baton changes hands only at pass() and leave(), so the blocks each runs and where
// it stops depend on the seeds alone, never on timing.
class Baton {
 public:
  explicit Baton(unsigned threads) : wake_(threads), left_(threads, 0) {}
  // Before the calling host thread's first block: waits for all to join and for the baton.
  void join();
  // Hands the baton to another host thread that has not left (the `pick`th of them, modulo their
  // count) and waits for it back. False (at once) when every other has left.
  bool pass(std::uint64_t pick);
  // The calling host thread takes no more blocks: the baton goes to the next one that has not left.
  void leave();

 private:
  std::mutex m_;
  // One per host thread, so that a hand-over wakes the one it hands to and no other.
  std::vector<std::condition_variable> wake_;
  unsigned joined_ = 0;
  unsigned holder_ = 0;
  std::vector<char> left_;
};

class Interleaver {
 public:
  // A launch under Config::interleave: marks the allocations its writable pointer arguments point
  // into. `baton`: the two host threads' (a launch of more than one block), or null.
  void begin_launch(const LaunchDesc& d, Baton* baton);
  // Puts back what a stale load hid and unmarks everything this launch marked.
  void end_launch();
  // A block starts with its dynamic shared memory at [smem, smem + bytes), or ends.
  void begin_block(Sched* sched, unsigned char* smem, std::size_t bytes);
  void end_block(unsigned char* smem, std::size_t bytes);
  // A static __shared__ array a thread of the block reached (kept marked until the launch's end:
  // it is the same array for every block of the host thread).
  void static_shared(void* p, std::size_t bytes);
  // A hooked load or store of marked memory by the running thread, made at `site` (the hook's
  // return address).
  void on_access(const void* addr, std::size_t bytes, bool write, const void* site);

 private:
  struct Range {
    unsigned char* lo;
    unsigned char* hi;
    bool global;  // an argument's allocation: what other blocks reach too
  };
  void watch(unsigned char* lo, unsigned char* hi, bool global);
  bool is_global(const unsigned char* p) const;
  // Puts the bytes other threads wrote back under a stale load, unless its thread overwrote them.
  void settle() {
    if (at_ != nullptr) settle_stale_load();
  }
  void settle_stale_load();

  std::vector<Range> launch_ranges_;  // argument allocations and static shared arrays
  Baton* baton_ = nullptr;
  // The scheduler of the host thread holding the baton (or the only one): set where a block starts
  // and where a hand-over returns, so the hooks need no thread-local lookup.
  Sched* sched_ = nullptr;
  // The running block's dynamic shared memory: most hooked loads, and never another block's.
  const unsigned char* smem_lo_ = nullptr;
  const unsigned char* smem_hi_ = nullptr;
  // A stale load in flight: at `at`, `size` bytes, `stale` what its thread was given in place of
  // `newer`.
  unsigned char* at_ = nullptr;
  std::size_t size_ = 0;
  unsigned char stale_[16];
  unsigned char newer_[16];
};

// The interleaver of the launch running now (null: none). Launches of hooked kernels run one at a
// time, on their launching thread (launch.cpp), as with g_access_shadow.
extern std::atomic<Interleaver*> g_interleaver;

}  // namespace simt::detail
