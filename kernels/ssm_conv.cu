// Causal depthwise conv of the GDN / SSM layers (reference-math.md §3.2, §4), f32, and its
// fused decode variants (ops C and D: the update from a cache slot, and with ids). Every variant computes
// each output with conv_window below - the same ascending-tap order and the same trailing `+ 0.0f` - so the
// fused ops are bit-identical to the plain one by construction.
//
// Layouts (row-major, innermost last):
//   w          [C, K]                  tap K-1 multiplies the current token
//   sx (plain) [n_seqs, C, K-1+T]      pre-concatenated window, oldest first (ggml SSM_CONV)
//   y  (plain) [n_seqs, T, C]
//   conv state [C, K-1] per sequence ("slot"), the K-1 most recent raw inputs, oldest first
//   x, y (update) [n_seqs, C]          the current token, its conv output
//
//   plain  y[s, t, c] = conv_window(sx[s, c, t .. t+K-1]), optionally SiLU.
//   C      window = [state_in[s, c, :] | x[s, c]] assembled in registers; y as plain; the
//          shifted ring (window[1..K-1]) written back into state_dst (the cache slot).
//          state_in (gathered taps) and state_dst are disjoint: race-free by construction.
//   D      C with ids: identity sequences read their taps in place from state_dst (safe: the
//          window is copied to registers before the ring write, and each thread owns its own
//          (seq, channel) taps); non-identity sequences read scratch[s], gathered from
//          cache[ids[s]] beforehand (gdn.cu gather_nonident).
#include "common.cuh"

// gdn.cu's: the production one, in a mutant of this file too (DSK_NS is then the mutant's namespace).
namespace DSK_PRODUCTION_NS {
void gather_nonident(const float*, const std::int32_t*, int, float*, std::size_t, int);
}

namespace DSK_NS {

using dsk::kConvMaxK;

__device__ inline float silu_f(float x) { return x / (1.0f + expf(-x)); }

// sum_i win[i] * w[i] in ascending i, then + 0.0f: ggml's `sumf += b` with b == 0.
__device__ inline float conv_window(const float* win, const float* w, int K) {
  float sum = 0.0f;
  for (int i = 0; i < K; ++i) sum += win[i] * w[i];
  sum += 0.0f;
  return sum;
}

constexpr int kConvThreads = 128;

__global__ void ssm_conv_kernel(const float* __restrict__ sx, const float* __restrict__ w,
                                float* __restrict__ y, int T, int C, int K, int silu) {
  const int c = static_cast<int>(blockIdx.x) * kConvThreads + static_cast<int>(threadIdx.x);
  const int seq = static_cast<int>(blockIdx.y);
  if (c >= C) return;
  const float* win = sx + (static_cast<std::size_t>(seq) * C + c) * (K - 1 + T);
  for (int t = 0; t < T; ++t) {
    const float r = conv_window(win + t, w + static_cast<std::size_t>(c) * K, K);
    y[(static_cast<std::size_t>(seq) * T + t) * C + c] = silu != 0 ? silu_f(r) : r;
  }
}

__global__ void ssm_conv_update_kernel(const float* state_in, const std::int32_t* __restrict__ ids,
                                       int rs_head, const float* __restrict__ scratch,
                                       const float* __restrict__ w, const float* __restrict__ x,
                                       float* state_dst, float* __restrict__ y, int C, int K, int silu) {
  const int c = static_cast<int>(blockIdx.x) * kConvThreads + static_cast<int>(threadIdx.x);
  const int seq = static_cast<int>(blockIdx.y);
  if (c >= C) return;
  const std::size_t taps =
      static_cast<std::size_t>(seq) * C + c;  // this (seq, channel)'s taps, in units of K-1
  const float* src;
  if (ids == nullptr)
    src = state_in;  // C: gathered taps
  else if (ids[seq] == rs_head + seq)
    src = state_dst;  // D identity: in place
  else
    src = scratch;  // D non-identity: the gathered copy
  src += taps * (K - 1);

  // The window in registers, before the (possibly aliasing) ring write.
  float win[kConvMaxK];
  for (int i = 0; i < K - 1; ++i) win[i] = src[i];
  win[K - 1] = x[static_cast<std::size_t>(seq) * C + c];

  const float r = conv_window(win, w + static_cast<std::size_t>(c) * K, K);
  y[static_cast<std::size_t>(seq) * C + c] = silu != 0 ? silu_f(r) : r;
  float* dst = state_dst + taps * (K - 1);
  for (int i = 0; i < K - 1; ++i) dst[i] = win[i + 1];
}

namespace {
void check_k(int K) {
  if (K < 2 || K > kConvMaxK) throw simt::KernelError("ssm_conv: needs 2 <= K <= kConvMaxK");
}
dim3 conv_grid(int C, int n_seqs) { return dim3((C + kConvThreads - 1) / kConvThreads, n_seqs); }
}  // namespace

void ssm_conv(const float* sx, const float* w, float* y, int n_seqs, int T, int C, int K, bool silu) {
  check_k(K);
  simt::launch(ssm_conv_kernel, conv_grid(C, n_seqs), dim3(kConvThreads), 0, nullptr, sx, w, y, T, C, K,
               silu ? 1 : 0);
}

void ssm_conv_update(const float* state_in, const float* w, const float* x, float* state_dst, float* y,
                     int n_seqs, int C, int K, bool silu) {
  check_k(K);
  simt::launch(ssm_conv_update_kernel, conv_grid(C, n_seqs), dim3(kConvThreads), 0, nullptr, state_in,
               static_cast<const std::int32_t*>(nullptr), 0, static_cast<const float*>(nullptr), w, x,
               state_dst, y, C, K, silu ? 1 : 0);
}

void ssm_conv_update_ids(float* cache, const std::int32_t* ids, int rs_head, float* scratch, const float* w,
                         const float* x, float* y, int n_seqs, int C, int K, bool silu) {
  check_k(K);
  const std::size_t slot = static_cast<std::size_t>(C) * (K - 1);
  gather_nonident(cache, ids, rs_head, scratch, slot, n_seqs);
  simt::launch(ssm_conv_update_kernel, conv_grid(C, n_seqs), dim3(kConvThreads), 0, nullptr,
               static_cast<const float*>(cache), ids, rs_head, static_cast<const float*>(scratch), w, x,
               cache + static_cast<std::size_t>(rs_head) * slot, y, C, K, silu ? 1 : 0);
}

}  // namespace DSK_NS
