// A warp reduction written for full warps, launched with 48 threads per row: the second warp's
// full mask names 16 lanes the block does not have.
#include "planted_rmsnorm.cuh"

constexpr int kThreads = 48;

__global__ void rmsnorm_warps(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float warp_sums[2];
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row + c] * x[row + c];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);  // @planted
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  const float inv_rms = rsqrtf((warp_sums[0] + warp_sums[1]) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row + c] = x[row + c] * inv_rms * w[c];
}

void shuffle_mask_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  rmsnorm_warps<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
  rmsnorm_end(d, out);
}
