// A LayerNorm-style output store from a flat grid, as written for many tokens: at a one-token step
// most threads of the grid have no element.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void scale_kernel(float* y, int n, int guarded) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (guarded != 0 && idx >= n) return;
  y[idx] = 0.5f * static_cast<float>(idx);  // @mem:grid-guard
}

}  // namespace

std::vector<float> grid_guard(bool guarded) {
  constexpr int n = 64;
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  scale_kernel<<<1, 256>>>(y, n, guarded ? 1 : 0);
  std::vector<float> out(n);
  MEMCHECK_CUDA(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(y));
  return out;
}

}  // namespace memcheck_cases
