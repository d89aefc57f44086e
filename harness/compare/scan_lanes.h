// The compare engine's vectorised inner loop for candidates stored in f32 (the common case and
// the benchmark's): one block of kLaneBlock element pairs, every metric kept in kLanes
// independent accumulators so the compiler can turn the element loop into SIMD without
// -ffast-math. The lane order is fixed, so results do not depend on the instruction set.
//
// scan_lanes.cpp is compiled once per ISA: the baseline and, on x86-64, AVX2 and AVX-512 (whose
// 32 registers hold every accumulator); metrics.cpp picks the widest the CPU runs. This header therefore
// holds plain data only (no inline functions whose out-of-line copies could be compiled for the wrong ISA).
#pragma once

#include <cstdint>

namespace ds::lanes {

inline constexpr int kLaneBlock = 1024;
inline constexpr int kAboveEdges = 6;  // ULP bucket edges 0, 1, 3, 15, 255, 65535

// What one block adds to the metrics. Minimum-tolerance and maximum fields start at 0 (every
// quantity they take the maximum of is compared against 0 by the caller anyway).
struct BlockTotals {
  double sum_abs, sum_d2, sum_r2, sum_c2, sum_rc;
  double max_abs, max_rel, max_ulp, min_atol, min_rtol;
  std::int64_t mismatches, sum_ulp;
  std::int64_t above[kAboveEdges];  // elements whose ULP distance exceeds each edge
};

// Scans ref[0..kLaneBlock) against cand[0..kLaneBlock) with ULPs counted in f32. Returns false,
// leaving `out` unspecified, when the block holds a NaN, an Inf or a subnormal f64 reference:
// those need the element-by-element path, whose rules for them are the definition.
#define DS_LANES_DECLARE(isa)                                                                             \
  namespace isa {                                                                                         \
  bool scan_block_f32(const float* ref, const float* cand, double atol, double rtol, BlockTotals& out);   \
  bool scan_block_f32(const double* ref, const float* cand, double atol, double rtol, BlockTotals& out);  \
  bool scan_block_f32(const float* ref, const double* cand, double atol, double rtol, BlockTotals& out);  \
  bool scan_block_f32(const double* ref, const double* cand, double atol, double rtol, BlockTotals& out); \
  }
DS_LANES_DECLARE(baseline)
DS_LANES_DECLARE(avx2)
DS_LANES_DECLARE(avx512)
#undef DS_LANES_DECLARE

}  // namespace ds::lanes
