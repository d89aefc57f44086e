// Indices reversed through shared memory by a 64-thread block. The planted variant sends its two
// warps to two different barriers: a GPU's barrier counts arrivals, so each warp may run on past
// its own barrier before the other warp's stores are done.
#include <cooperative_groups.h>

#include "common.h"
#include "synccheck_cases.h"

namespace cg = cooperative_groups;

namespace synccheck_cases {
namespace {

constexpr int kThreads = 64;

__global__ void reverse_kernel(float* out, int split);

}  // namespace

std::vector<float> two_barriers(bool clean) {
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&out, kThreads * sizeof(float)));
  reverse_kernel<<<1, kThreads>>>(out, clean ? 0 : 1);
  std::vector<float> host(kThreads);
  SYNC_CUDA(cudaMemcpy(host.data(), out, kThreads * sizeof(float), cudaMemcpyDeviceToHost));
  SYNC_CUDA(cudaFree(out));
  return host;
}

namespace {

__global__ void reverse_kernel(float* out, int split) {
  __shared__ float slot[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  slot[t] = static_cast<float>(t);
  if (split != 0 && t < 32) {
    __syncthreads();  // @sync:first-warp
  } else {
    cg::this_thread_block().sync();  // @sync:block-sync
  }
  out[t] = slot[kThreads - 1 - t];
}

}  // namespace
}  // namespace synccheck_cases
