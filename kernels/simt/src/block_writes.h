// The hazard checker's view of global memory between blocks (Config::racecheck): after each block
// of a grid, which bytes of the launch's writable allocations it changed. A byte changed by two
// blocks, not both times by an atomic, is a write-write race between blocks (a lost update on a
// GPU, where the blocks run at once): the split-K `+=` that should be an atomicAdd.
//
// It sees writes by their effect (a snapshot compared after every block), so it needs no fault per
// access; it cannot see reads, so a block reading what another block writes is not found here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simt/simt_cpu.h"

namespace simt::detail {

class BlockWrites {
 public:
  // Snapshots every allocation a writable pointer argument of `d` points into.
  explicit BlockWrites(const LaunchDesc& d);
  // After block `linear_block` ran: the bytes it changed, checked against the blocks before it.
  void after_block(std::uint64_t linear_block);
  // The races found, worded for the race report (at most a few, the rest counted).
  std::vector<std::string> take();

  // Addresses the running block touched through an atomic (the atomics of simt_cpu.h note them).
  std::vector<std::pair<std::uintptr_t, std::size_t>> atomics;

 private:
  struct Watched {
    unsigned char* base;
    std::size_t bytes;
    std::vector<unsigned char> before;  // as the previous block left it
    std::vector<std::int64_t> owner;    // the last block that changed each byte; -1: none
    std::vector<bool> atomic_only;      // every change so far made through an atomic
    const PtrArg* arg;                  // the first writable argument pointing into it
  };
  bool touched_atomically(std::uintptr_t addr) const;

  const LaunchDesc& d_;
  std::vector<Watched> watched_;
  std::vector<std::string> found_;
  std::size_t more_ = 0;
};

}  // namespace simt::detail
