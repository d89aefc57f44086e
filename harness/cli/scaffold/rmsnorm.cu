// RMSNorm, f32: out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w.
//
// One block per row. Each thread sums the squares of a strided slice of the row, the block
// adds the partial sums in shared memory (a tree: halve the active threads each round), then
// every thread scales its slice. The same file runs on the CPU (Driftscope's SIMT runtime)
// and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

__global__ void rmsnorm_kernel(const float* x, const float* w, float* out, int cols, float eps) {
  __shared__ float partial[kThreads];
  const float* row = x + static_cast<long>(blockIdx.x) * cols;
  float* row_out = out + static_cast<long>(blockIdx.x) * cols;

  float sum_sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum_sq += row[c] * row[c];
  partial[threadIdx.x] = sum_sq;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float mean_sq = partial[0] / cols;
  const float inv_rms = rsqrtf(mean_sq + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row_out[c] = row[c] * inv_rms * w[c];
}

// Host entry point: host pointers in and out (what the candidate hands over).
void rmsnorm_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  simt::DeviceBuffer<float> d_x(static_cast<std::size_t>(rows) * cols), d_w(cols),
      d_out(static_cast<std::size_t>(rows) * cols);
  d_x.upload(x, d_x.size());
  d_w.upload(w, d_w.size());
  simt::launch(rmsnorm_kernel, dim3(rows), dim3(kThreads), 0, nullptr, d_x.data(), d_w.data(), d_out.data(),
               cols, eps);
  simt::synchronize();
  d_out.download(out, d_out.size());
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string rmsnorm_unavailable() { return simt::device_error(); }
