// A static __shared__ tile sized for one warp, filled by a block of two.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void tile_kernel(float* out) {
  __shared__ float tile[32];
  const unsigned t = threadIdx.x;
  tile[t] = static_cast<float>(t);  // @mem:static-shared
  __syncthreads();
  out[t] = tile[t % 32];
}

// The tile read back as float4, as tiled kernels load shared memory: aligned on a GPU.
__global__ void tile4_kernel(float* out) {
  __shared__ float tile[64];
  const unsigned t = threadIdx.x;
  tile[t] = static_cast<float>(t);
  __syncthreads();
  const float4 v = reinterpret_cast<const float4*>(tile)[t % 16];
  out[t] = (v.x + v.y) + (v.z + v.w);
}

}  // namespace

std::vector<float> static_shared_as_float4() {
  constexpr int threads = 64;
  float* out = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&out, threads * sizeof(float)));
  tile4_kernel<<<1, threads>>>(out);
  std::vector<float> host(threads);
  MEMCHECK_CUDA(cudaMemcpy(host.data(), out, threads * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(out));
  return host;
}

std::vector<float> static_shared_past_size(int threads) {
  float* out = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&out, threads * sizeof(float)));
  tile_kernel<<<1, threads>>>(out);
  std::vector<float> host(threads);
  MEMCHECK_CUDA(cudaMemcpy(host.data(), out, threads * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(out));
  return host;
}

}  // namespace memcheck_cases
