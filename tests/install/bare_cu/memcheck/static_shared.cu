// The row staged in a static __shared__ array sized for 32 threads and launched with 64: thread 32
// stores past the array.
#include "planted_rmsnorm.cuh"

constexpr int kStaged = 32;
constexpr int kThreads = 64;

__global__ void scale_staged(const float* x, const float* w, const float* inv_rms, float* y, int cols) {
  __shared__ float staged[kStaged];
  const size_t row = static_cast<size_t>(blockIdx.x) * cols;
  for (int c0 = 0; c0 < cols; c0 += blockDim.x) {
    const int c = c0 + threadIdx.x;
    if (c < cols) staged[threadIdx.x] = x[row + c];  // @planted
    __syncthreads();
    if (c < cols) y[row + c] = staged[threadIdx.x] * inv_rms[blockIdx.x] * w[c];
    __syncthreads();
  }
}

void static_shared_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d = rmsnorm_begin(x, w, rows, cols, eps);
  scale_staged<<<rows, kThreads>>>(d.x, d.w, d.inv_rms, d.y, cols);
  rmsnorm_end(d, out);
}
