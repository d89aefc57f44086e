// One block per row summing the squares as a tree in dynamic shared memory, launched with room for
// half the block's threads (the size in floats where bytes were meant, over 2): thread 32 of 64
// stores its partial sum past it.
#include "planted_rmsnorm.cuh"

constexpr int kThreads = 64;

__global__ void rmsnorm_tree(const float* x, const float* w, float* y, int cols, float eps) {
  extern __shared__ float partial[];
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row + c] * x[row + c];
  partial[threadIdx.x] = acc;  // @planted
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv_rms = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row + c] = x[row + c] * inv_rms * w[c];
}

void dynamic_shared_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  rmsnorm_tree<<<rows, kThreads, kThreads / 2 * sizeof(float)>>>(d.x, d.w, d.y, cols, eps);
  rmsnorm_end(d, out);
}
