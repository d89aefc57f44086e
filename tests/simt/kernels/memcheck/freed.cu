// Lifetimes gone wrong on the host: a launch on freed memory (by cudaFree or by cudaDeviceReset), a
// block freed twice, a free of an interior pointer.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void fill_kernel(float* y) {
  y[threadIdx.x] = 1.0f;  // @mem:use-after-free
}

}  // namespace

std::vector<float> use_after_free() {
  constexpr int n = 32;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  MEMCHECK_CUDA(cudaFree(y));
  fill_kernel<<<1, n>>>(y);
  return {};
}

std::vector<float> use_after_device_reset() {
  constexpr int n = 32;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  MEMCHECK_CUDA(cudaDeviceReset());
  fill_kernel<<<1, n>>>(y);
  return {};
}

void double_free() {
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, 32 * sizeof(float)));
  MEMCHECK_CUDA(cudaFree(y));
  MEMCHECK_CUDA(cudaFree(y));
}

void free_of_never_allocated() {
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, 32 * sizeof(float)));
  MEMCHECK_CUDA(cudaFree(y + 8));
  MEMCHECK_CUDA(cudaFree(y));
}

}  // namespace memcheck_cases
