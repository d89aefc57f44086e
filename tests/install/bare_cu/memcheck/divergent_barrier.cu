// Each row's sum of squares reduced in the block as a tree, its barrier moved inside the
// `if (tid < stride)`: half the block waits at one barrier, the rest at another.
#include "planted_rmsnorm.cuh"

constexpr int kThreads = 64;

__global__ void rmsnorm_tree(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float partial[kThreads];
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row + c] * x[row + c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      partial[threadIdx.x] += partial[threadIdx.x + stride];
      __syncthreads();  // @planted
    }
  }
  __syncthreads();
  const float inv_rms = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row + c] = x[row + c] * inv_rms * w[c];
}

void divergent_barrier_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  rmsnorm_tree<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
  rmsnorm_end(d, out);
}
