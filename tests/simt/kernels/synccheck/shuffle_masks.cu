// Warp shuffles whose mask names lanes that are not there: a lane past the block's last thread
// (the second warp of a 48-thread block has 16 lanes), a lane that has returned, and lanes that are
// elsewhere (at a barrier). Each clean twin names only the lanes that take part.
#include "common.h"
#include "synccheck_cases.h"

namespace synccheck_cases {
namespace {

constexpr int kBlockOf48 = 48;
constexpr int kWarp = 32;

__global__ void broadcast_kernel(float* out, int full_mask);
__global__ void swap_pairs_kernel(const float* in, float* out);
__global__ void lower_half_broadcast_kernel(float* out, int full_mask);

// The `n` floats a kernel wrote to `out`, freed.
std::vector<float> take(float* out, int n) {
  std::vector<float> host(n);
  SYNC_CUDA(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  SYNC_CUDA(cudaFree(out));
  return host;
}

}  // namespace

std::vector<float> shuffle_mask_past_block_end(bool clean) {
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&out, kBlockOf48 * sizeof(float)));
  broadcast_kernel<<<1, kBlockOf48>>>(out, clean ? 0 : 1);
  return take(out, kBlockOf48);
}

std::vector<float> shuffle_mask_exited_lane(bool clean) {
  std::vector<float> host(kWarp);
  for (int i = 0; i < kWarp; ++i) host[i] = static_cast<float>(i + 1);
  if (!clean) host[0] = -1.0f;  // lane 0 has no element: it returns before the shuffle
  float* in = nullptr;
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&in, kWarp * sizeof(float)));
  SYNC_CUDA(cudaMalloc(&out, kWarp * sizeof(float)));
  SYNC_CUDA(cudaMemcpy(in, host.data(), kWarp * sizeof(float), cudaMemcpyHostToDevice));
  swap_pairs_kernel<<<1, kWarp>>>(in, out);
  SYNC_CUDA(cudaFree(in));
  return take(out, kWarp);
}

std::vector<float> shuffle_mask_inactive_lanes(bool clean) {
  float* out = nullptr;
  SYNC_CUDA(cudaMalloc(&out, kWarp * sizeof(float)));
  lower_half_broadcast_kernel<<<1, kWarp>>>(out, clean ? 0 : 1);
  return take(out, kWarp);
}

namespace {

__global__ void broadcast_kernel(float* out, int full_mask) {
  const int t = static_cast<int>(threadIdx.x);
  const int left = static_cast<int>(blockDim.x) - t / kWarp * kWarp;  // lanes of this warp and beyond
  const int lanes = left < kWarp ? left : kWarp;
  const unsigned mask = full_mask != 0 || lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1u;
  out[t] = __shfl_sync(mask, static_cast<float>(t), 0);  // @sync:past-end
}

__global__ void swap_pairs_kernel(const float* in, float* out) {
  const int t = static_cast<int>(threadIdx.x);
  const float v = in[t];
  if (v < 0.0f) return;
  out[t] = __shfl_xor_sync(0xffffffffu, v, 1);  // @sync:exited-lane
}

__global__ void lower_half_broadcast_kernel(float* out, int full_mask) {
  const int t = static_cast<int>(threadIdx.x);
  float v = static_cast<float>(t);
  if (t < kWarp / 2)
    v = __shfl_sync(full_mask != 0 ? 0xffffffffu : 0x0000ffffu, v, 0);  // @sync:inactive-shfl
  __syncthreads();                                                      // @sync:inactive-barrier
  out[t] = v;
}

}  // namespace
}  // namespace synccheck_cases
