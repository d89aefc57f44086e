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

// One block per row, one thread per column: every thread sums the row's squares itself, in the same
// order, and stores the same 1/rms to one shared float (a benign write-write race), then all read it.
__global__ void row_rmsnorm_kernel(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float inv;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0.0f;
  for (int c = 0; c < cols; ++c) ss += xr[c] * xr[c];
  inv = rsqrtf(ss / cols + eps);  // @row:same-value-store
  __syncthreads();
  y[static_cast<size_t>(blockIdx.x) * cols + threadIdx.x] = xr[threadIdx.x] * inv * w[threadIdx.x];
}

// A thread per row, the row read four floats at a time: right where `cols` is a multiple of 4 (every
// preset's width), and at an odd width a load reaches past the row (misaligned, and past the end of
// the buffer at the last row).
__global__ void vec4_rmsnorm_kernel(const float* x, const float* w, float* y, int rows, int cols, float eps) {
  const int row = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) return;
  const float* xr = x + static_cast<size_t>(row) * cols;
  float ss = 0.0f;
  for (int c = 0; c < cols; c += 4) {
    const float4 v = *reinterpret_cast<const float4*>(xr + c);  // @vec4:load
    ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  const float inv = rsqrtf(ss / cols + eps);
  for (int c = 0; c < cols; ++c) y[static_cast<size_t>(row) * cols + c] = xr[c] * inv * w[c];
}

// Copies x and w to the device, runs `launch(dx, dw, dy)` and copies y back; the device copy of w
// is freed only with `free_weight`.
template <class Launch>
void on_device(float* out, const float* x, const float* w, int rows, int cols, bool free_weight,
               Launch launch) {
  const size_t n = static_cast<size_t>(rows) * cols;
  float *dx = nullptr, *dw = nullptr, *dy = nullptr;
  FLAT_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  FLAT_CHECK(cudaMalloc(&dw, cols * sizeof(float)));  // @flat:weight-copy
  FLAT_CHECK(cudaMalloc(&dy, n * sizeof(float)));
  FLAT_CHECK(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
  FLAT_CHECK(cudaMemcpy(dw, w, cols * sizeof(float), cudaMemcpyHostToDevice));
  launch(dx, dw, dy);
  FLAT_CHECK(cudaMemcpy(out, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  FLAT_CHECK(cudaFree(dx));
  if (free_weight) FLAT_CHECK(cudaFree(dw));
  FLAT_CHECK(cudaFree(dy));
}

}  // namespace

void row_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  on_device(out, x, w, rows, cols, true, [&](float* dx, float* dw, float* dy) {
    row_rmsnorm_kernel<<<rows, cols>>>(dx, dw, dy, cols, eps);
  });
}

void vec4_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  on_device(out, x, w, rows, cols, true, [&](float* dx, float* dw, float* dy) {
    vec4_rmsnorm_kernel<<<(rows + 31) / 32, 32>>>(dx, dw, dy, rows, cols, eps);
  });
}

void flat_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps, bool guarded,
                  bool free_weight) {
  // Whole blocks: a step of fewer than 256 elements still runs one block of 256 threads.
  const int blocks = (rows * cols + kThreads - 1) / kThreads;
  on_device(out, x, w, rows, cols, free_weight, [&](float* dx, float* dw, float* dy) {
    flat_rmsnorm_kernel<<<blocks, kThreads>>>(dx, dw, dy, rows, cols, eps, guarded ? 1 : 0);
  });
}
