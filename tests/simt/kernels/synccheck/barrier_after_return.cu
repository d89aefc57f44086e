// A rotation staged through shared memory by a block larger than its data: the threads past the
// data leave before the barrier (NVIDIA GPUs release a barrier that only exited threads hold up;
// strict mode calls it a divergent barrier), or stay and skip only the work.
#include "common.h"
#include "synccheck_cases.h"

namespace synccheck_cases {
namespace {

constexpr int kThreads = 64;
constexpr int kElements = 32;

__global__ void rotate_kernel(const float* in, float* out, int n, int leave_early);

}  // namespace

std::vector<float> barrier_after_return(bool clean) {
  std::vector<float> host(kElements);
  for (int i = 0; i < kElements; ++i) host[i] = static_cast<float>(i);
  float* in = nullptr;
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&in, kElements * sizeof(float)));
  SYNC_CUDA(cudaMalloc(&out, kElements * sizeof(float)));
  SYNC_CUDA(cudaMemcpy(in, host.data(), kElements * sizeof(float), cudaMemcpyHostToDevice));
  rotate_kernel<<<1, kThreads>>>(in, out, kElements, clean ? 0 : 1);
  SYNC_CUDA(cudaMemcpy(host.data(), out, kElements * sizeof(float), cudaMemcpyDeviceToHost));
  SYNC_CUDA(cudaFree(in));
  SYNC_CUDA(cudaFree(out));
  return host;
}

namespace {

__global__ void rotate_kernel(const float* in, float* out, int n, int leave_early) {
  __shared__ float tile[kElements];
  const int t = static_cast<int>(threadIdx.x);
  if (leave_early != 0 && t >= n) return;
  if (t < n) tile[t] = in[t];
  __syncthreads();  // @sync:after-return
  if (t < n) out[t] = tile[(t + 1) % n];
}

}  // namespace
}  // namespace synccheck_cases
