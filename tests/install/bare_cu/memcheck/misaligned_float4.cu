// Columns 1..60 of each row read as float4 from x + 1: the numbers are right (a CPU reads any
// address), but the address is 4 bytes past a 16-byte boundary, which a GPU faults on.
#include "planted_rmsnorm.cuh"

__global__ void scale_vec4(const float* x, const float* w, const float* inv_rms, float* y, int cols) {
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  const float s = inv_rms[blockIdx.x];
  const int vecs = (cols - 1) / 4;
  for (int v = threadIdx.x; v < vecs; v += blockDim.x) {
    const float4 q = reinterpret_cast<const float4*>(x + row + 1)[v];  // @planted
    const int c = 1 + 4 * v;
    y[row + c] = q.x * s * w[c];
    y[row + c + 1] = q.y * s * w[c + 1];
    y[row + c + 2] = q.z * s * w[c + 2];
    y[row + c + 3] = q.w * s * w[c + 3];
  }
  if (threadIdx.x == 0) {
    y[row] = x[row] * s * w[0];
    for (int c = 1 + 4 * vecs; c < cols; ++c) y[row + c] = x[row + c] * s * w[c];
  }
}

void misaligned_float4_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  scale_vec4<<<rows, 32>>>(d.x, d.w, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
}
