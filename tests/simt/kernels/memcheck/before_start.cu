// Indices shifted below zero: a read of a window's left halo with no bound, and a hostile write.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void shifted_read_kernel(const float* in, float* out) {
  const int i = static_cast<int>(threadIdx.x);
  out[i] = in[i - 4];  // @mem:read-before
}

__global__ void hostile_write_kernel(float* y) {
  if (threadIdx.x == 0) y[-16] = 1.0f;  // @mem:write-before
}

}  // namespace

std::vector<float> read_before_start() {
  constexpr int n = 64;
  float *in = nullptr, *out = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&in, n * sizeof(float)));
  MEMCHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
  MEMCHECK_CUDA(cudaMemset(in, 0, n * sizeof(float)));
  shifted_read_kernel<<<1, n>>>(in, out);
  std::vector<float> host(n);
  MEMCHECK_CUDA(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(in));
  MEMCHECK_CUDA(cudaFree(out));
  return host;
}

std::vector<float> write_before_start() {
  constexpr int n = 64;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  hostile_write_kernel<<<1, 32>>>(y);
  std::vector<float> host(n);
  MEMCHECK_CUDA(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(y));
  return host;
}

}  // namespace memcheck_cases
