// Each half-warp reverses its values through shared memory, its stores and loads ordered by a
// __syncwarp of its own half. The planted variant gives the upper half the lower half's mask, which
// does not name the calling lane.
#include "common.h"
#include "synccheck_cases.h"

namespace synccheck_cases {
namespace {

constexpr int kWarp = 32;

__global__ void half_reverse_kernel(float* out, int wrong_mask);

}  // namespace

std::vector<float> syncwarp_mask_without_caller(bool clean) {
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&out, kWarp * sizeof(float)));
  half_reverse_kernel<<<1, kWarp>>>(out, clean ? 0 : 1);
  std::vector<float> host(kWarp);
  SYNC_CUDA(cudaMemcpy(host.data(), out, kWarp * sizeof(float), cudaMemcpyDeviceToHost));
  SYNC_CUDA(cudaFree(out));
  return host;
}

namespace {

__global__ void half_reverse_kernel(float* out, int wrong_mask) {
  __shared__ float slot[kWarp];
  const int t = static_cast<int>(threadIdx.x);
  slot[t] = static_cast<float>(t);
  const bool lower = t < kWarp / 2;
  const unsigned mask = lower || wrong_mask != 0 ? 0x0000ffffu : 0xffff0000u;
  __syncwarp(mask);  // @sync:not-in-mask
  const int half = t / (kWarp / 2) * (kWarp / 2);
  out[t] = slot[half + (kWarp / 2 - 1) - (t - half)];
}

}  // namespace
}  // namespace synccheck_cases
