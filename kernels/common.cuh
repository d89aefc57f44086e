// Device helpers shared by kernels/*.cu: element conversions, warp / block reductions and
// the warp-per-row dot product every projection kernel is built on.
#pragma once

#include "simt/simt.h"
#include "simt/simt_fp16.h"

#include <cstring>

#include "kernels.h"

#if defined(__CUDACC__)
#define DSK_NS dsk_cuda
#else
#define DSK_NS dsk_simt
#endif

namespace DSK_NS {

using dsk::kGemvWarps;

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__half v) { return __half2float(v); }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over the whole block, the same value returned to every thread. `scratch`
// holds 32 floats of shared memory; blockDim.x is a multiple of 32. The order of the
// additions is fixed (lanes, then warps in order), so results do not depend on scheduling.
// `bug` plants one of two races (uniform over the block, so skipping a barrier stays legal).
template <bool Max>
__device__ inline float block_reduce(float v, float* scratch, int bug = dsk::kBugNone) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int n_warps = static_cast<int>(blockDim.x) / 32;
  v = Max ? warp_max(v) : warp_sum(v);
  // scratch may still be read by a previous reduction. Planted (kBugReduceWar): without this
  // barrier a fast warp overwrites a partial a slow warp has not read yet (write-after-read).
  if (bug != dsk::kBugReduceWar) __syncthreads();
  if (lane == 0) scratch[warp] = v;
  // Planted (kBugReduceNoBarrier): without it, warps read partials not yet written.
  if (bug != dsk::kBugReduceNoBarrier) __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < n_warps; ++w) r = Max ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}

// 16 bytes of weights (4 f32 or 8 f16/bf16) dotted with the matching f32 values of x.
template <class W>
__device__ inline float dot16(const W* w, const float* xs) {
  constexpr int n = 16 / static_cast<int>(sizeof(W));
  const uint4 raw = *reinterpret_cast<const uint4*>(w);  // one vectorised load
  W e[n];
  memcpy(static_cast<void*>(e), &raw, sizeof raw);
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += to_f(e[i]) * xs[i];
  return acc;
}

// The GEMV kernels' first move: token t's row of x (cols f16 values) into shared memory as f32,
// read once by every warp of the block. Ends with the barrier that publishes it.
__device__ inline void stage_row_f32(const __half* x, int t, int cols, float* xs) {
  const __half* xt = x + static_cast<std::size_t>(t) * cols;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x))
    xs[c] = __half2float(xt[c]);
  __syncthreads();
}

// One warp: dot(w[0:cols], xs[0:cols]), the result in every lane. Scalar head until w is
// 16-byte aligned, 16-byte vector loads for the body, scalar tail: any cols and any row
// alignment work, and aligned rows take only vector loads.
// `bug` plants one of two bugs of the GEMV kernel (gemv.cu).
template <class W>
__device__ inline float warp_dot(const W* w, const float* xs, int cols, int lane, int bug = dsk::kBugNone) {
  if (bug == dsk::kBugGemvHalfAccum) {
    // Planted: the row summed by one lane into a half accumulator, rounded after every add, as a
    // scalar fallback written in the storage dtype does. Each rounding is about as large as the
    // output's own, so the error is a few times the f16 floor, not orders of magnitude.
    float acc = 0.0f;
    if (lane == 0)
      for (int c = 0; c < cols; ++c) acc = __half2float(__float2half_rn(acc + to_f(w[c]) * xs[c]));
    return __shfl_sync(0xffffffffu, acc, 0);
  }
  constexpr int V = 16 / static_cast<int>(sizeof(W));
  const int mis = static_cast<int>((reinterpret_cast<std::uintptr_t>(w) % 16) / sizeof(W));
  int head = mis == 0 ? 0 : V - mis;
  if (head > cols) head = cols;
  const int body_end = head + (cols - head) / V * V;
  float acc = 0.0f;
  if (lane < head) acc += to_f(w[lane]) * xs[lane];
  for (int c = head + lane * V; c < body_end; c += 32 * V) acc += dot16(w + c, xs + c);
  // Planted (kBugGemvNoTail): the scalar tail forgotten. Whole 16-byte vectors only, so the last
  // cols % V elements of a row count only where the row's alignment head happens to absorb them.
  if (bug != dsk::kBugGemvNoTail)
    for (int c = body_end + lane; c < cols; c += 32) acc += to_f(w[c]) * xs[c];
  return warp_sum(acc);
}

inline int round_up32(int n) { return (n + 31) / 32 * 32; }

}  // namespace DSK_NS
