// Reads of device memory nothing wrote (initcheck): a buffer straight from cudaMalloc, and one a
// first kernel filled only in part. The clean variants write it first by each way a host program
// does: cudaMemset, cudaMemcpy, a kernel, a store of host code.
#undef NDEBUG  // the device assert stays on in every build type
#include <cassert>

#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void fill_front_kernel(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(i);
}

__global__ void copy_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];  // @mem:unwritten
}

__global__ void read_then_assert_kernel(const float* x, float* y) {
  const int i = threadIdx.x;
  y[i] = x[i];
  assert(i < 16);
}

}  // namespace

void unwritten_read_then_assert() {
  float* x = nullptr;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&x, 32 * sizeof(float)));
  MEMCHECK_CUDA(cudaMalloc(&y, 32 * sizeof(float)));
  struct Free {
    float* x;
    float* y;
    ~Free() {
      cudaFree(x);
      cudaFree(y);
    }
  } free_both{x, y};
  read_then_assert_kernel<<<1, 32>>>(x, y);
}

std::vector<float> unwritten_read(UnwrittenWay way) {
  constexpr int n = 64;
  float* x = nullptr;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  MEMCHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  std::vector<float> host(n, 1.0f);
  switch (way) {
    case UnwrittenWay::nothing: break;
    case UnwrittenWay::memset: MEMCHECK_CUDA(cudaMemset(x, 0, n * sizeof(float))); break;
    case UnwrittenWay::memcpy:
      MEMCHECK_CUDA(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      break;
    case UnwrittenWay::kernel: fill_front_kernel<<<1, n>>>(x, n); break;
    case UnwrittenWay::half_by_kernel: fill_front_kernel<<<1, n>>>(x, n / 2); break;
    case UnwrittenWay::host_loop:
      for (int i = 0; i < n; ++i) x[i] = host[i];  // device memory is host memory on the CPU
      break;
  }
  copy_kernel<<<1, n>>>(x, y, n);
  std::vector<float> out(n);
  MEMCHECK_CUDA(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(x));
  MEMCHECK_CUDA(cudaFree(y));
  return out;
}

}  // namespace memcheck_cases
