// The output row's offset computed in bytes and then scaled by 2^20 (a mix-up of units): every row
// past the first stores a gigabyte or more past the output.
#include "planted_rmsnorm.cuh"

__global__ void scale_rows(const float* x, const float* w, const float* inv_rms, float* y, int cols) {
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  const size_t out_row = static_cast<size_t>(blockIdx.x) * cols * sizeof(float) << 20;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[out_row + c] = x[row + c] * inv_rms[blockIdx.x] * w[c];  // @planted
}

void wild_store_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  scale_rows<<<rows, 64>>>(d.x, d.w, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
}
