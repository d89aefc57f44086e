// The LayerNorm bug of issue 51 in an RMSNorm: a flat grid sized for many tokens, reads clamped to
// the last row, and the store unguarded.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "flat_rmsnorm.h"

namespace {

constexpr int kThreads = 256;

#define FLAT_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t err = (call);                                                                        \
    if (err != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err)); \
  } while (0)

__global__ void flat_rmsnorm_kernel(const float* x, const float* w, float* y, int rows, int cols, float eps,
                                    int guarded) {
  const int idx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (guarded != 0 && idx >= rows * cols) return;
  const int row = idx / cols < rows ? idx / cols : rows - 1;
  const int col = idx % cols;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float ss = 0.0f;
  for (int c = 0; c < cols; ++c) ss += xr[c] * xr[c];
  const float inv = rsqrtf(ss / cols + eps);
  y[idx] = xr[col] * inv * w[col];  // @flat:store
}

}  // namespace

void flat_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps, bool guarded,
                  bool free_weight) {
  const size_t n = static_cast<size_t>(rows) * cols;
  float *dx = nullptr, *dw = nullptr, *dy = nullptr;
  FLAT_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  FLAT_CHECK(cudaMalloc(&dw, cols * sizeof(float)));  // @flat:weight-copy
  FLAT_CHECK(cudaMalloc(&dy, n * sizeof(float)));
  FLAT_CHECK(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
  FLAT_CHECK(cudaMemcpy(dw, w, cols * sizeof(float), cudaMemcpyHostToDevice));
  // Whole blocks: a step of fewer than 256 elements still runs one block of 256 threads.
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  flat_rmsnorm_kernel<<<blocks, kThreads>>>(dx, dw, dy, rows, cols, eps, guarded ? 1 : 0);
  FLAT_CHECK(cudaMemcpy(out, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  FLAT_CHECK(cudaFree(dx));
  if (free_weight) FLAT_CHECK(cudaFree(dw));
  FLAT_CHECK(cudaFree(dy));
}
