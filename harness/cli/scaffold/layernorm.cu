// LayerNorm, f32: out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b, where mean and var are
// the row's mean and biased (population) variance: GPT-2's ln_1, ln_2 and ln_f (eps 1e-5).
//
// One block per row, two passes over it: the block sums the row for the mean, then the squared
// distances from that mean for the variance (each sum a tree in shared memory: halve the active
// threads each round). Two passes rather than E[x^2] - mean^2, which cancels badly when a row's
// mean is large next to its spread. The same file runs on the CPU (Driftscope's SIMT runtime)
// and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

// The sum of every thread's `v` over the block, returned to all of them.
__device__ float block_sum(float* partial, float v) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float sum = partial[0];
  __syncthreads();  // every thread has read the sum before the next call overwrites it
  return sum;
}

__global__ void layernorm_kernel(const float* x, const float* w, const float* b, float* out, float* mean_out,
                                 float* rstd_out, int cols, float eps) {
  __shared__ float partial[kThreads];
  const float* row = x + static_cast<long>(blockIdx.x) * cols;
  float* row_out = out + static_cast<long>(blockIdx.x) * cols;

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
  const float mean = block_sum(partial, sum) / cols;
  float sum_sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum_sq += (row[c] - mean) * (row[c] - mean);
  const float rstd = rsqrtf(block_sum(partial, sum_sq) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) row_out[c] = (row[c] - mean) * rstd * w[c] + b[c];
  if (threadIdx.x == 0 && mean_out) mean_out[blockIdx.x] = mean;
  if (threadIdx.x == 0 && rstd_out) rstd_out[blockIdx.x] = rstd;
}

// Host entry point: host pointers in and out (what the candidate hands over). mean and rstd get
// each row's mean and 1 / sqrt(var + eps) when not null.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                       int rows, int cols, float eps) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  simt::DeviceBuffer<float> d_x(n), d_w(cols), d_b(cols), d_out(n), d_mean(rows), d_rstd(rows);
  d_x.upload(x, n);
  d_w.upload(w, cols);
  d_b.upload(b, cols);
  simt::launch(layernorm_kernel, dim3(rows), dim3(kThreads), 0, nullptr, d_x.data(), d_w.data(), d_b.data(),
               d_out.data(), d_mean.data(), d_rstd.data(), cols, eps);
  simt::synchronize();
  d_out.download(out, n);
  if (mean) d_mean.download(mean, rows);
  if (rstd) d_rstd.download(rstd, rows);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string layernorm_unavailable() { return simt::device_error(); }
