// A bias buffer allocated for a model that has one and never filled (this one has none): every
// element reads memory nothing wrote.
#include "planted_rmsnorm.cuh"

__global__ void scale_rows_bias(const float* x, const float* w, const float* b, const float* inv_rms, float* y,
                                int cols) {
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[row + c] = x[row + c] * inv_rms[blockIdx.x] * w[c] + b[c];  // @planted
}

void unwritten_bias_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  float* bias = nullptr;
  cudaMalloc(&bias, cols * sizeof(float));
  scale_rows_bias<<<rows, 64>>>(d.x, d.w, bias, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
  cudaFree(bias);
}
