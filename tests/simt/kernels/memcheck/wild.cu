// Pointers to nothing: a null output, and an index gigabytes past the output.
#include <cstddef>

#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void store_kernel(float* y, long long shift) {
  y[shift + threadIdx.x] = 2.0f;  // @mem:wild
}

}  // namespace

void null_store() { store_kernel<<<1, 32>>>(nullptr, 0); }

void wild_store() {
  float* y = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&y, 32 * sizeof(float)));
  store_kernel<<<1, 32>>>(y, (1ll << 30));  // 4 GiB of floats past the block
  MEMCHECK_CUDA(cudaFree(y));
}

}  // namespace memcheck_cases
