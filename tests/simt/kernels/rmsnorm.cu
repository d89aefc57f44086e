#include "test_kernels.h"

namespace simt_test {
namespace {

constexpr int kNormThreads = 256;

template <NormBug Bug>
__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                               float* __restrict__ y, int cols, float eps) {
  __shared__ float partial[kNormThreads];
  const int tid = static_cast<int>(threadIdx.x);
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0.0f;
  for (int c = tid; c < cols; c += kNormThreads) ss += xr[c] * xr[c];
  partial[tid] = ss;
  __syncthreads();
  for (int s = kNormThreads / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    if constexpr (Bug == NormBug::none) {
      __syncthreads();
    } else if constexpr (Bug == NormBug::sync_under_if) {
      if (tid < s) __syncthreads();  // @bug:sync-under-if
    }
  }
  const float inv = rsqrtf(partial[0] / static_cast<float>(cols) + eps);
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  for (int c = tid; c < cols; c += kNormThreads) yr[c] = xr[c] * inv * gamma[c];
}

template <NormBug Bug>
void launch_norm(const float* x, const float* gamma, float* y, int rows, int cols, float eps,
                 simt::stream_t s) {
  simt::launch(rmsnorm_kernel<Bug>, dim3(rows), dim3(kNormThreads), 0, s, x, gamma, y, cols, eps);
}

}  // namespace

void rmsnorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps, NormBug bug,
             simt::stream_t stream) {
  switch (bug) {
    case NormBug::none: launch_norm<NormBug::none>(x, gamma, y, rows, cols, eps, stream); break;
    case NormBug::missing_loop_sync:
      launch_norm<NormBug::missing_loop_sync>(x, gamma, y, rows, cols, eps, stream);
      break;
    case NormBug::sync_under_if:
      launch_norm<NormBug::sync_under_if>(x, gamma, y, rows, cols, eps, stream);
      break;
  }
}

}  // namespace simt_test
