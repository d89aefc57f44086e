// The shared-memory hazard checker (Config::racecheck), the CPU counterpart of compute-sanitizer's
// racecheck: per barrier phase it records which thread read and wrote every byte of the block's
// dynamic shared memory and reports read-after-write, write-after-read and write-after-write
// between threads that no barrier (or, within a warp, no warp collective) orders.
//
// Accesses are seen without instrumenting the kernel: the shared buffer is mapped PROT_NONE, each
// access faults, the handler records it, opens the buffer and single-steps the one instruction
// (x86-64 trap flag), and the trap closes the buffer again. So nothing costs anything when the
// checker is off, and about two signals per shared access when it is on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simt/simt_cpu.h"

namespace simt::detail {

// Who is accessing: filled by the scheduler when an access faults.
struct AccessCtx {
  std::uint32_t thread;  // linear thread index in the block
  std::uint32_t warp;
  std::uint32_t warp_sync;  // warp collectives completed by that warp so far
  std::uint64_t phase;      // barrier phases completed by the block so far
};
using AccessCtxFn = AccessCtx (*)();

// What a checker found, worded with file:line: hazards that fail a launch, and benign ones that only
// note it: a write-after-write of the value the element already held (every lane of a warp storing
// the warp's reduced sum), where a GPU stores one of two equal values and the order changes nothing.
struct HazardReport {
  std::vector<std::string> real;
  std::vector<std::string> benign;
};

// One per scheduler (host thread). Not thread-safe; the checker runs grids on one host thread.
class HazardChecker {
 public:
  // A page-aligned buffer of at least `bytes`, reused between blocks, for the dynamic shared memory.
  unsigned char* arena(std::size_t bytes);
  // Starts watching [base, base + bytes) of a new block of `nthreads` threads (base from arena()).
  void begin_block(unsigned char* base, std::size_t bytes, unsigned nthreads, dim3 block, AccessCtxFn ctx);
  // The element size of a SIMT_DYNAMIC_SHARED declaration: accesses are recorded that wide.
  void note_elem(std::size_t elem_bytes);
  // Stops watching; the block's hazards are kept for take().
  void end_block(uint3 block_idx);
  // The hazards found since the last take() (at most a few of each kind, deduplicated).
  HazardReport take();

  // Called from the SIGSEGV handler: true when `addr` was in the watched buffer (then recorded).
  bool on_fault(const void* addr, bool write, const void* pc);
  void on_step_done();

 private:
  struct Cell {
    std::uint64_t w_phase = 0, r_phase = 0;  // phase + 1 of the last write / reads; 0: none
    std::int32_t writer = -1, r1 = -1, r2 = -1;
    std::uint32_t w_warp = 0, w_sync = 0, r1_warp = 0, r1_sync = 0, r2_warp = 0, r2_sync = 0;
    const void* w_pc = nullptr;
    const void* r1_pc = nullptr;
    const void* r2_pc = nullptr;
  };
  struct Hazard {
    char kind[4];  // "RAW", "WAR", "WAW"
    std::size_t offset;
    std::int32_t first_thread, second_thread;
    const void* first_pc;
    const void* second_pc;
    bool differs;  // WAW: some occurrence stored another value than the byte held (else benign)
  };
  // A WAW store that faulted and has not run yet: the bytes it overwrites, compared with what it
  // stored once its instruction has run (on_step_done).
  struct PendingStore {
    std::size_t hazard;  // in block_hazards_
    std::size_t from, to;
    unsigned char before[16];
  };
  // Returns the hazard's index in block_hazards_ (new, or the same sites' earlier one), or -1.
  int note(const char* kind, std::size_t offset, std::int32_t first, const void* first_pc,
           std::int32_t second, const void* second_pc);

  // A WAW of hazard `hazard` (-1: not kept) by a store to [from, to) of the arena, not yet run.
  void expect_store(int hazard, std::size_t from, std::size_t to);

  unsigned char* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  unsigned char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t elem_ = 0;
  dim3 block_{1, 1, 1};
  AccessCtxFn ctx_ = nullptr;
  std::vector<Cell> cells_;
  std::vector<Hazard> block_hazards_;  // reserved up front: on_fault never allocates
  std::vector<std::string> found_;
  std::vector<std::string> benign_;
  PendingStore pending_[4];  // one faulting instruction's; no allocation in the handler
  std::size_t n_pending_ = 0;
  std::size_t more_ = 0;  // hazards past the kept ones
};

// Installs the fault and trap handlers for the lifetime of the object (one racecheck launch).
class HazardSignals {
 public:
  HazardSignals();
  ~HazardSignals();
  HazardSignals(const HazardSignals&) = delete;
  HazardSignals& operator=(const HazardSignals&) = delete;
};

// The checker of the calling host thread's scheduler (set by the scheduler while it watches).
void set_current_checker(HazardChecker* c);

}  // namespace simt::detail
