// GEMV with optional bias, f32: y[t, r] = sum_c W[r, c] * x[t, c] + b[r], W stored [rows, cols].
//
// One warp per output row: its 32 lanes walk the row of W in strides of 32 (adjacent lanes read
// adjacent weights: coalesced), then fold their partial sums with warp shuffles. A block holds
// kWarps warps, i.e. kWarps rows; the grid's y dimension is the token. The same file runs on
// the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kWarps = 8;

__global__ void gemv_kernel(const float* W, const float* x, const float* bias, float* y, int rows, int cols) {
  const int row = blockIdx.x * kWarps + threadIdx.y;
  const int t = blockIdx.y;
  if (row >= rows) return;  // a whole warp leaves together: the shuffles below stay full
  const float* w_row = W + static_cast<long>(row) * cols;
  const float* x_t = x + static_cast<long>(t) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) sum += w_row[c] * x_t[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x == 0) y[static_cast<long>(t) * rows + row] = sum + (bias ? bias[row] : 0.0f);
}

// Host entry point: host pointers in and out (what the candidate hands over); bias may be null.
void gemv_forward(float* y, const float* W, const float* x, const float* bias, int tokens, int rows,
                  int cols) {
  simt::DeviceBuffer<float> d_W(static_cast<std::size_t>(rows) * cols),
      d_x(static_cast<std::size_t>(tokens) * cols), d_y(static_cast<std::size_t>(tokens) * rows),
      d_b(bias ? rows : 0);
  d_W.upload(W, d_W.size());
  d_x.upload(x, d_x.size());
  if (bias) d_b.upload(bias, rows);
  const dim3 grid((rows + kWarps - 1) / kWarps, tokens), block(32, kWarps);
  simt::launch(gemv_kernel, grid, block, 0, nullptr, d_W.data(), d_x.data(), bias ? d_b.data() : nullptr,
               d_y.data(), rows, cols);
  simt::synchronize();
  d_y.download(y, d_y.size());
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string gemv_unavailable() { return simt::device_error(); }
