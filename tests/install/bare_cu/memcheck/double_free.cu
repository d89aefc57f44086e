// The output freed by rmsnorm_end, then again by a cleanup line of its own.
#include "planted_rmsnorm.cuh"

__global__ void scale_rows(const float* x, const float* w, const float* inv_rms, float* y, int cols) {
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row + c] = x[row + c] * inv_rms[blockIdx.x] * w[c];
}

void double_free_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  scale_rows<<<rows, 64>>>(d.x, d.w, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
  cudaFree(d.y);  // @planted
}
