// What the planted RMSNorm kernel files of this folder share, written as a kernel author's own
// helper header: y[r, :] = x[r, :] * inv_rms[r] * w, where one kernel computes each row's
// inv_rms = 1 / sqrt(mean(x[r, :]^2) + eps) and a case's own kernel does the scaling; and the host
// side (cudaMalloc, copies in and out, cudaFree). Each case .cu plants one fault in its kernel or
// host steps; tests/install/bare_cu_memcheck_e2e.py names where `check` and `verify` must find it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// One thread per row.
__global__ void row_inv_rms(const float* x, float* inv_rms, int rows, int cols, float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + static_cast<size_t>(r) * cols;
  float acc = 0.0f;
  for (int c = 0; c < cols; ++c) acc += xr[c] * xr[c];
  inv_rms[r] = rsqrtf(acc / cols + eps);
}

// One call's device memory: x and w copied in, inv_rms computed, y for the case's kernel to fill.
struct RmsnormCall {
  int rows = 0, cols = 0;
  float *x = nullptr, *w = nullptr, *inv_rms = nullptr, *y = nullptr;
};

inline RmsnormCall rmsnorm_begin(const float* x, const float* w, int rows, int cols, float eps) {
  RmsnormCall d;
  d.rows = rows;
  d.cols = cols;
  const size_t act = static_cast<size_t>(rows) * cols * sizeof(float);
  cudaMalloc(&d.x, act);
  cudaMalloc(&d.w, cols * sizeof(float));
  cudaMalloc(&d.inv_rms, rows * sizeof(float));
  cudaMalloc(&d.y, act);
  cudaMemcpy(d.x, x, act, cudaMemcpyHostToDevice);
  cudaMemcpy(d.w, w, cols * sizeof(float), cudaMemcpyHostToDevice);
  row_inv_rms<<<(rows + 31) / 32, 32>>>(d.x, d.inv_rms, rows, cols, eps);
  return d;
}

// y copied out, every buffer freed.
inline void rmsnorm_end(RmsnormCall& d, float* out) {
  cudaDeviceSynchronize();
  cudaMemcpy(out, d.y, static_cast<size_t>(d.rows) * d.cols * sizeof(float), cudaMemcpyDeviceToHost);
  for (float* p : {d.x, d.w, d.inv_rms, d.y}) cudaFree(p);
}
