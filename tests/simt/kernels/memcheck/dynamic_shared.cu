// Dynamic shared memory launched for half the block: every thread stages one value.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void stage_kernel(float* out) {
  extern __shared__ float staged[];
  const unsigned t = threadIdx.x;
  staged[t] = static_cast<float>(t);  // @mem:dyn-shared
  __syncthreads();
  out[t] = staged[blockDim.x - 1 - t];
}

}  // namespace

std::vector<float> dynamic_shared_past_size() {
  constexpr int n = 64;
  float* out = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
  stage_kernel<<<1, n, (n / 2) * sizeof(float)>>>(out);
  std::vector<float> host(n);
  MEMCHECK_CUDA(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(out));
  return host;
}

}  // namespace memcheck_cases
