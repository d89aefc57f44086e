// A scratch row for the split path, allocated only when there is more than one row, written
// always: at a one-token decode step the kernel stores through a null pointer.
#include "planted_rmsnorm.cuh"

__global__ void scale_rows_scratch(const float* x, const float* w, const float* inv_rms, float* y, float* scratch,
                                   int cols) {
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    y[row + c] = x[row + c] * inv_rms[blockIdx.x] * w[c];
    if (blockIdx.x == 0) scratch[c] = y[row + c];  // @planted
  }
}

void null_store_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  float* scratch = nullptr;
  if (rows > 1) cudaMalloc(&scratch, cols * sizeof(float));
  scale_rows_scratch<<<rows, 64>>>(d.x, d.w, d.inv_rms, d.y, scratch, cols);
  rmsnorm_end(d, out);
  cudaFree(scratch);
}
