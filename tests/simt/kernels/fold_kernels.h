// Host entry points of fold_kernels.cu: warp reductions written as loops of shuffles, which the .cu
// rewrite step fuses into one collective each (kernels/simt/tools/shuffle_loop.h), next to the same
// shuffles written out one statement each, which it leaves alone.
#pragma once

namespace simt_test {

enum class FoldCase {
  xor_sum,          // float, acc += __shfl_xor_sync, 5 steps
  down_sum,         // float, __shfl_down_sync: the upper lanes add their own value
  up_max,           // float, a = fmaxf(a, __shfl_up_sync(...)), steps 1, 2, 4, 8, 16
  xor_sum_width16,  // float, width 16: two independent halves
  idx_rotate_sum,   // float, a = a + __shfl_sync(m, a, (lane + i) & 31): each lane its own source
  int_xor_down,     // int, v ^= __shfl_down_sync
  int_max,          // int, v = max(v, __shfl_xor_sync(...))
  double_xor_sum,   // double, 8 bytes
  pair_xor_sum,     // a 16-byte struct with +=, over the fused 8 bytes (SIMT only: CUDA shuffles 8 at most)
};
inline constexpr int kFoldCases = 9;

// Per thread i of `blocks` blocks of `threads` (a multiple of 32): in[i] reduced by the case's loop
// into fused[i] and by the written-out shuffles into unrolled[i], both as double (exact for every
// case's type). Device pointers.
void fold_vs_unrolled(FoldCase c, const float* in, double* fused, double* unrolled, int blocks, int threads);

// Misuses that fail with the loop's line (markers in fold_kernels.cu): the loop's mask names a lane
// that returned first; the lanes' loops run different numbers of steps.
void fold_after_a_lane_exited(double* out);
void fold_with_steps_per_lane(double* out);

}  // namespace simt_test
