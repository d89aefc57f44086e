#include "fold_kernels.h"

#include <type_traits>

#include "test_kernels.h"

namespace simt_test {
namespace {

constexpr unsigned kAll = 0xffffffffu;

template <class T>
__device__ void fold_case(FoldCase c, T a, double* fused, double* unrolled, int i) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  T b = a;
  switch (c) {
    case FoldCase::pair_xor_sum:  // fold_pair's
      break;
    case FoldCase::xor_sum:
    case FoldCase::double_xor_sum:
      for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(kAll, a, o);
      b += __shfl_xor_sync(kAll, b, 16);
      b += __shfl_xor_sync(kAll, b, 8);
      b += __shfl_xor_sync(kAll, b, 4);
      b += __shfl_xor_sync(kAll, b, 2);
      b += __shfl_xor_sync(kAll, b, 1);
      break;
    case FoldCase::down_sum:
      for (int o = warpSize / 2; o >= 1; o /= 2) a = a + __shfl_down_sync(kAll, a, o);
      b = b + __shfl_down_sync(kAll, b, 16);
      b = b + __shfl_down_sync(kAll, b, 8);
      b = b + __shfl_down_sync(kAll, b, 4);
      b = b + __shfl_down_sync(kAll, b, 2);
      b = b + __shfl_down_sync(kAll, b, 1);
      break;
    case FoldCase::up_max:
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        a = fmaxf(a, __shfl_up_sync(kAll, a, d));
      }
      b = fmaxf(b, __shfl_up_sync(kAll, b, 1));
      b = fmaxf(b, __shfl_up_sync(kAll, b, 2));
      b = fmaxf(b, __shfl_up_sync(kAll, b, 4));
      b = fmaxf(b, __shfl_up_sync(kAll, b, 8));
      b = fmaxf(b, __shfl_up_sync(kAll, b, 16));
      break;
    case FoldCase::xor_sum_width16:
      for (int o = 8; o > 0; o >>= 1) a += __shfl_xor_sync(kAll, a, o, 16);
      b += __shfl_xor_sync(kAll, b, 8, 16);
      b += __shfl_xor_sync(kAll, b, 4, 16);
      b += __shfl_xor_sync(kAll, b, 2, 16);
      b += __shfl_xor_sync(kAll, b, 1, 16);
      break;
    case FoldCase::idx_rotate_sum:
      for (int s = 1; s < 32; s *= 2) a = a + __shfl_sync(kAll, a, (lane + s) & 31);
      b = b + __shfl_sync(kAll, b, (lane + 1) & 31);
      b = b + __shfl_sync(kAll, b, (lane + 2) & 31);
      b = b + __shfl_sync(kAll, b, (lane + 4) & 31);
      b = b + __shfl_sync(kAll, b, (lane + 8) & 31);
      b = b + __shfl_sync(kAll, b, (lane + 16) & 31);
      break;
    case FoldCase::int_xor_down:
      if constexpr (std::is_integral_v<T>) {
        for (int o = 16; o; o >>= 1) a ^= __shfl_down_sync(kAll, a, o);
        b ^= __shfl_down_sync(kAll, b, 16);
        b ^= __shfl_down_sync(kAll, b, 8);
        b ^= __shfl_down_sync(kAll, b, 4);
        b ^= __shfl_down_sync(kAll, b, 2);
        b ^= __shfl_down_sync(kAll, b, 1);
      }
      break;
    case FoldCase::int_max:
      if constexpr (std::is_integral_v<T>) {
        for (int o = 16; o > 0; o >>= 1) a = max(a, __shfl_xor_sync(kAll, a, o));
        b = max(b, __shfl_xor_sync(kAll, b, 16));
        b = max(b, __shfl_xor_sync(kAll, b, 8));
        b = max(b, __shfl_xor_sync(kAll, b, 4));
        b = max(b, __shfl_xor_sync(kAll, b, 2));
        b = max(b, __shfl_xor_sync(kAll, b, 1));
      }
      break;
  }
  fused[i] = static_cast<double>(a);
  unrolled[i] = static_cast<double>(b);
}

// Two doubles, 16 bytes: shfl_fold runs such a loop's steps as shuffles of their own. CUDA
// shuffles nothing over 8 bytes; the SIMT runtime shuffles up to 16, so only its build has this.
#ifndef __CUDACC__
struct Pair {
  double lo, hi;
  __device__ Pair& operator+=(const Pair& o) {
    lo += o.lo;
    hi += o.hi;
    return *this;
  }
};

__device__ void fold_pair(float v, double* fused, double* unrolled, int i) {
  Pair a{v, v * 0.5};
  Pair b = a;
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(kAll, a, o);
  b += __shfl_xor_sync(kAll, b, 16);
  b += __shfl_xor_sync(kAll, b, 8);
  b += __shfl_xor_sync(kAll, b, 4);
  b += __shfl_xor_sync(kAll, b, 2);
  b += __shfl_xor_sync(kAll, b, 1);
  fused[i] = a.lo * 3.0 + a.hi;
  unrolled[i] = b.lo * 3.0 + b.hi;
}
#endif

__global__ void fold_kernel(FoldCase c, const float* in, double* fused, double* unrolled) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
#ifndef __CUDACC__
  if (c == FoldCase::pair_xor_sum) return fold_pair(in[i], fused, unrolled, i);
#endif
  if (c == FoldCase::int_xor_down || c == FoldCase::int_max)
    fold_case<int>(c, static_cast<int>(in[i] * 1000.0f), fused, unrolled, i);
  else if (c == FoldCase::double_xor_sum)
    fold_case<double>(c, static_cast<double>(in[i]) * 1e-3, fused, unrolled, i);
  else
    fold_case<float>(c, in[i], fused, unrolled, i);
}

__global__ void exited_lane_kernel(double* out) {
  float a = static_cast<float>(threadIdx.x);
  if (threadIdx.x == 31) return;
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(kAll, a, o);  // @fold-exited
  out[threadIdx.x] = a;
}

__global__ void steps_per_lane_kernel(double* out) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  float a = static_cast<float>(lane);
  for (int o = 16; o > (lane < 16 ? 0 : 1); o >>= 1) a += __shfl_xor_sync(kAll, a, o);  // @fold-steps
  out[threadIdx.x] = a;
}

}  // namespace

void fold_vs_unrolled(FoldCase c, const float* in, double* fused, double* unrolled, int blocks, int threads) {
  fold_kernel<<<blocks, threads>>>(c, in, fused, unrolled);
}

void fold_after_a_lane_exited(double* out) { exited_lane_kernel<<<1, 32>>>(out); }
void fold_with_steps_per_lane(double* out) { steps_per_lane_kernel<<<1, 32>>>(out); }

}  // namespace simt_test
