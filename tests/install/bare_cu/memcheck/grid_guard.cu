// One thread per element over a flat grid of 256-thread blocks, with no `if (i < n)`: the prefill's
// 4 x 64 elements fill the block exactly, a one-token decode step's 64 do not, and 192 threads
// store past the output.
#include "planted_rmsnorm.cuh"

constexpr int kThreads = 256;

__global__ void scale_flat(const float* x, const float* w, const float* inv_rms, float* y, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i] * inv_rms[i / cols] * w[i % cols];  // @planted
}

void grid_guard_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  scale_flat<<<(rows * cols + kThreads - 1) / kThreads, kThreads>>>(d.x, d.w, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
}
