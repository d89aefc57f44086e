#include "test_kernels.h"

namespace simt_test {
namespace {

template <GemvBug Bug>
__global__ void gemv_kernel(const float* __restrict__ W, const float* __restrict__ x, float* __restrict__ y,
                            int rows, int cols) {
  SIMT_DYNAMIC_SHARED(float, xs);
  const int tid = static_cast<int>(threadIdx.x);
  for (int c = tid; c < cols; c += static_cast<int>(blockDim.x)) xs[c] = x[c];
  if constexpr (Bug != GemvBug::missing_sync) __syncthreads();

  const int warp = tid / 32;
  const int lane = tid % 32;
  const int row = Bug == GemvBug::wrong_row ? static_cast<int>(blockIdx.x)
                                            : static_cast<int>(blockIdx.x) * kGemvWarpsPerBlock + warp;
  if (row >= rows) return;
  const float* w = W + static_cast<size_t>(row) * cols;
  float acc = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    acc += w[c] * xs[Bug == GemvBug::off_by_one_shared ? c + 1 : c];  // @bug:off-by-one
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) y[row] = acc;
}

template <GemvBug Bug>
void launch_gemv(const float* W, const float* x, float* y, int rows, int cols, simt::stream_t stream) {
  const dim3 grid((rows + kGemvWarpsPerBlock - 1) / kGemvWarpsPerBlock);
  const dim3 block(32 * kGemvWarpsPerBlock);
  simt::launch(gemv_kernel<Bug>, grid, block, static_cast<size_t>(cols) * sizeof(float), stream, W, x, y,
               rows, cols);
}

}  // namespace

void gemv(const float* W, const float* x, float* y, int rows, int cols, GemvBug bug, simt::stream_t stream) {
  switch (bug) {
    case GemvBug::none: launch_gemv<GemvBug::none>(W, x, y, rows, cols, stream); break;
    case GemvBug::missing_sync: launch_gemv<GemvBug::missing_sync>(W, x, y, rows, cols, stream); break;
    case GemvBug::wrong_row: launch_gemv<GemvBug::wrong_row>(W, x, y, rows, cols, stream); break;
    case GemvBug::off_by_one_shared:
      launch_gemv<GemvBug::off_by_one_shared>(W, x, y, rows, cols, stream);
      break;
  }
}

}  // namespace simt_test
