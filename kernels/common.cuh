// Device helpers shared by kernels/*.cu: element conversions, warp / block reductions and
// the warp-per-row dot product every projection kernel is built on.
#pragma once

#include "simt/simt.h"
#include "simt/simt_fp16.h"

#include <cstring>

#include "kernels.h"

// The namespace of this build's kernels: dsk_cuda under nvcc, dsk_simt through SIMT. A mutant
// (kernels/mutants/, docs/mutants.md) compiles a patched copy of a kernel file with DSK_NS defined
// as its own namespace inside this one, DSK_PRODUCTION_NS::mutant_<name>.
#if defined(__CUDACC__)
#define DSK_PRODUCTION_NS dsk_cuda
#else
#define DSK_PRODUCTION_NS dsk_simt
#endif
#if !defined(DSK_NS)
#define DSK_NS DSK_PRODUCTION_NS
#endif

namespace DSK_NS {

using dsk::kGemvRows;

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
template <bool Max>
__device__ inline float block_reduce(float v, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int n_warps = static_cast<int>(blockDim.x) / 32;
  v = Max ? warp_max(v) : warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();  // every warp's partial written before any is read
  float r = scratch[0];
  for (int w = 1; w < n_warps; ++w) r = Max ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}

// One lane's share of dot(w[0:cols], xs_p[0:cols]) for `nt` token rows of x at once (xs_p =
// xs + p * cols), into acc[0:nt]: every weight is loaded and converted once for all the tokens.
// Scalar head until w is 16-byte aligned, 16-byte vector loads for the body, scalar tail: any
// cols and any row alignment work, and aligned rows take only vector loads. Each token's partial
// is added up in the same order whatever nt is: a vector's products first, then into the lane's sum.
template <class W>
__device__ inline void lane_dots(const W* w, const float* xs, int nt, int cols, int lane, float* acc) {
  for (int p = 0; p < nt; ++p) acc[p] = 0.0f;
  constexpr int V = 16 / static_cast<int>(sizeof(W));
  const int mis = static_cast<int>((reinterpret_cast<std::uintptr_t>(w) % 16) / sizeof(W));
  int head = mis == 0 ? 0 : V - mis;
  if (head > cols) head = cols;
  const int body_end = head + (cols - head) / V * V;
  if (lane < head) {
    const float wc = to_f(w[lane]);
    for (int p = 0; p < nt; ++p) acc[p] += wc * xs[p * cols + lane];
  }
  for (int c = head + lane * V; c < body_end; c += 32 * V) {
    const uint4 raw = *reinterpret_cast<const uint4*>(w + c);  // one vectorised load
    W e[V];
    memcpy(static_cast<void*>(e), &raw, sizeof raw);
    float wf[V];
    for (int i = 0; i < V; ++i) wf[i] = to_f(e[i]);
    for (int p = 0; p < nt; ++p) {
      // The V values as one copy: a kernel built CHECKED then makes one hooked access of the row
      // here rather than V (the interleaved rerun and the hazard checker pay a call per access).
      float xv[V];
      memcpy(xv, xs + p * cols + c, sizeof xv);
      float s = 0.0f;
      for (int i = 0; i < V; ++i) s += wf[i] * xv[i];
      acc[p] += s;
    }
  }
  for (int c = body_end + lane; c < cols; c += 32) {
    const float wc = to_f(w[c]);
    for (int p = 0; p < nt; ++p) acc[p] += wc * xs[p * cols + c];
  }
}

// One warp: dot(w[0:cols], xs[0:cols]), the result in every lane.
template <class W>
__device__ inline float warp_dot(const W* w, const float* xs, int cols, int lane) {
  float acc = 0.0f;
  lane_dots(w, xs, 1, cols, lane, &acc);
  return warp_sum(acc);
}

// The value lane 0 ends with in warp_sum, from the 32 lanes' partials in shared memory: the same
// pairs added in the same order, so the same bits. A block that reduces many rows or tokens then
// needs one __syncwarp where warp_sum needs five shuffles per value.
__device__ inline float butterfly_sum32(const float* v) {
  float s[16];
  for (int i = 0; i < 16; ++i) s[i] = v[i] + v[i + 16];
  for (int o = 8; o > 0; o >>= 1)
    for (int i = 0; i < o; ++i) s[i] += s[i + o];
  return s[0];
}

// Tokens one projection block serves at once, so each weight row is read once for all of them:
// as many as the 48 KiB of shared memory a block gets without opting in holds, at
// gemv_smem_bytes each (the token's x row and its rows' partials), up to kGemvTokens.
inline constexpr int kGemvTokens = 8;
inline std::size_t gemv_smem_bytes(int tokens, int cols) {
  return static_cast<std::size_t>(tokens) * static_cast<std::size_t>(cols + 32 * kGemvRows) * sizeof(float);
}
inline int gemv_tokens(int T, int cols) {
  int n = kGemvTokens < T ? kGemvTokens : T;
  while (n > 1 && gemv_smem_bytes(n, cols) > 48 * 1024) --n;
  return n < 1 ? 1 : n;
}
// Output rows one warp computes for a group of `tokens`: a warp keeps rows x tokens partials, at
// most kGemvTokens, so a decode-sized launch gives each warp several rows and its collectives
// serve them all. A block stays kGemvRows rows (kGemvRows / rows-per-warp warps).
inline int gemv_rows_per_warp(int tokens) { return tokens <= 2 ? 4 : tokens <= 4 ? 2 : 1; }

// The projection kernels' first move: tokens [t0, t0 + nt) of x (cols f16 values each) into shared
// memory as f32, row after row, read by every warp of the block; published by a barrier.
__device__ inline void stage_rows_f32(const __half* x, int t0, int nt, int cols, float* xs) {
  const __half* xt = x + static_cast<std::size_t>(t0) * cols;
  const int n = nt * cols;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    xs[i] = __half2float(xt[i]);
  __syncthreads();
}

inline int round_up32(int n) { return (n + 31) / 32 * 32; }

}  // namespace DSK_NS

// Block-quantized matrices as kernel operands (QRows), beside the plain `const W*` ones above.
#include "quant_rows.cuh"
