// The hazard checker for kernels built with access hooks (Config::racecheck on a kernel library
// built by driftscope_add_simt_kernel(... CHECKED)): the compiler calls a hook at every load and
// store of the kernel (GCC/Clang -fsanitize=thread instrumentation, linked without the TSan
// runtime: access_hooks.cpp defines the hooks), and the hook looks the address up in the regions
// this launch watches and updates a shadow of the last write and the reads of every byte.
//
// Watched: the block's dynamic shared memory, each static __shared__ array the block reaches, and
// every simt::malloc allocation a writable pointer argument of the launch points into. Two
// accesses to one byte, at least one a write, race when
//  - shared memory or global memory, same block: different threads in the same barrier phase that
//    no warp collective of their warp separates (as the fault-based checker of hazards.h);
//  - global memory, different blocks: always, unless both are atomics (blocks run at once on a
//    GPU, and nothing but an atomic orders them within a launch).
// Each race is reported with both accesses' file:line (the hook's return address). A read of a
// shared-memory byte the block never wrote is kept apart (take_uninit_reads), with its file:line.
//
// Cost: one call per access of the kernel, a scan of a few regions, and for watched bytes one
// 48-byte shadow cell per byte touched. Global shadows live for one launch (mapped lazily, so only
// pages of the outputs actually touched cost anything); shared ones are reused and told apart by
// the block's serial number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hazards.h"
#include "simt/simt_cpu.h"

namespace simt::detail {

class AccessShadow {
 public:
  AccessShadow() = default;
  AccessShadow(const AccessShadow&) = delete;
  AccessShadow& operator=(const AccessShadow&) = delete;
  ~AccessShadow();

  // A checked launch: watches the allocations the writable pointer arguments of `d` point into.
  void begin_launch(const LaunchDesc& d, AccessCtxFn ctx);
  // Drops the launch's global shadows and returns the races it found, worded with file:line.
  std::vector<std::string> end_launch();
  // The reads of never-written shared memory found since the last call, worded with file:line.
  std::vector<std::string> take_uninit_reads();
  // A block of the launch starts (its dynamic shared memory at [smem, smem + bytes)) or ends.
  void begin_block(unsigned char* smem, std::size_t bytes, dim3 block_dim, uint3 block_idx);
  void end_block();
  // A static __shared__ array reached by a thread of the running block.
  void static_shared(void* p, std::size_t bytes);

  // Every instrumented access (access_hooks.cpp). `pc`: the instruction that made it.
  void on_access(const void* addr, std::size_t bytes, bool write, bool atomic, const void* pc);

 private:
  struct Access {              // one recorded access; block 0: none
    std::uint32_t block = 0;   // the block's serial number (1, 2, ... over the checker's life)
    std::uint32_t phase = 0;   // barrier phases the block had completed
    std::uint16_t thread = 0;  // linear thread index in the block | kAtomic for an atomic
    std::uint16_t sync = 0;    // warp collectives the thread's warp had completed (low bits)
    std::int32_t pc = 0;       // from kPcAnchor (pc_offset); 0: unknown
  };
  struct Cell {
    Access w;       // the last write
    Access r1, r2;  // reads since it, of up to two different threads
  };
  enum class Kind : std::uint8_t { dynamic_shared, static_shared, global };
  struct Region {
    unsigned char* lo;
    unsigned char* hi;
    Cell* cells;
    Kind kind;
    const PtrArg* arg;             // global: the first writable argument pointing into it
    std::size_t mapped_bytes = 0;  // global: the shadow's own mapping, unmapped at the launch's end
  };
  struct Finding {
    char kind[8];  // "RAW", "WAR", "WAW", "uninit"
    Kind region;
    std::size_t offset;  // in its region (global: from the argument's pointer)
    const PtrArg* arg;
    Access first, second;
    bool first_write, second_write;
  };
  struct StaticShadow {
    void* addr;
    std::size_t bytes;
    std::vector<Cell> cells;
  };

  void check(const Region& r, std::size_t off, bool write, const Access& me);
  void note(const char* kind, const Region& r, std::size_t off, const Access& first, bool first_write,
            const Access& second, bool second_write);
  std::string word(const Finding& f) const;

  AccessCtxFn ctx_ = nullptr;
  const LaunchDesc* launch_ = nullptr;
  std::string kernel_;              // its name, for the uninit reads kept past the launch
  std::uint32_t serial_ = 0;        // of the running block
  std::uint32_t first_serial_ = 0;  // of the launch's first block
  dim3 block_dim_{1, 1, 1};
  dim3 grid_dim_{1, 1, 1};
  std::vector<Region> regions_;  // [0, n_global_): the launch's allocations; then this block's
  std::size_t n_global_ = 0;
  std::vector<Cell> dyn_cells_;
  std::vector<StaticShadow> statics_;
  std::vector<Finding> findings_;
  std::size_t more_ = 0;
  std::vector<Finding> uninit_;  // of the running launch
  std::vector<std::string> uninit_words_;
};

// The shadow of the checked launch running on this host thread (null: none, the hooks return).
extern constinit thread_local AccessShadow* tl_access_shadow;

}  // namespace simt::detail
