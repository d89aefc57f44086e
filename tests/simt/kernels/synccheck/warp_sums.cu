// A block sum as reductions are often written: a warp reduction, every lane storing its warp's sum
// to partial[warp] (32 stores of one value: a benign write-after-write), then one thread adding
// the partials. Without the barrier before that read it races with the other warp's stores.
#include "common.h"
#include "synccheck_cases.h"

namespace synccheck_cases {
namespace {

constexpr int kThreads = 64;

__global__ void block_sum_kernel(const float* x, float* sum, int barrier);

}  // namespace

std::vector<float> warp_sums(bool barrier) {
  std::vector<float> host(kThreads);
  for (int i = 0; i < kThreads; ++i) host[i] = static_cast<float>(i % 7);  // exact in any order
  float* x = nullptr;
  float* sum = nullptr;
  SYNC_CUDA(cudaMalloc(&x, kThreads * sizeof(float)));
  SYNC_CUDA(cudaMalloc(&sum, sizeof(float)));
  SYNC_CUDA(cudaMemcpy(x, host.data(), kThreads * sizeof(float), cudaMemcpyHostToDevice));
  block_sum_kernel<<<1, kThreads>>>(x, sum, barrier ? 1 : 0);
  std::vector<float> out(1);
  SYNC_CUDA(cudaMemcpy(out.data(), sum, sizeof(float), cudaMemcpyDeviceToHost));
  SYNC_CUDA(cudaFree(x));
  SYNC_CUDA(cudaFree(sum));
  return out;
}

namespace {

__global__ void block_sum_kernel(const float* x, float* sum, int barrier) {
  __shared__ float partial[kThreads / 32];
  const int t = static_cast<int>(threadIdx.x);
  float v = x[t];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  partial[t / 32] = v;  // @sync:warp-sum-store
  if (barrier != 0) __syncthreads();
  // The last thread reads: under the CPU's forward order the first warp has finished by then.
  if (t == kThreads - 1) sum[0] = partial[0] + partial[1];  // @sync:partials-read
}

}  // namespace
}  // namespace synccheck_cases
