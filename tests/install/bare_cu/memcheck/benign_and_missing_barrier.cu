// A warp-shuffle reduction in which every lane of a warp stores the same warp sum to
// warp_sums[warp] (a benign same-value write-write), and thread 0 then adds the warps' sums with no
// __syncthreads() between: a real read-after-write hazard on warp_sums[1].
#include "planted_rmsnorm.cuh"

constexpr int kThreads = 64;

__global__ void rmsnorm_warps(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float inv_rms;
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row + c] * x[row + c];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  warp_sums[threadIdx.x / 32] = acc;  // @benign
  if (threadIdx.x == 0) inv_rms = rsqrtf((warp_sums[0] + warp_sums[1]) / cols + eps);  // @planted
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row + c] = x[row + c] * inv_rms * w[c];
}

void benign_and_missing_barrier_forward(float* out, const float* x, const float* w, int rows, int cols,
                                        float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  rmsnorm_warps<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
  rmsnorm_end(d, out);
}
