// Residual add, f32: out[i] = a[i] + b[i] (residual_1 = x + attn_out, residual_2 = residual_1 +
// the MLP's output).
//
// One thread per element: the add is bound by memory, so the only thing that matters is that
// adjacent threads touch adjacent elements (coalesced). The same file runs on the CPU
// (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;

__global__ void residual_kernel(const float* a, const float* b, float* out, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = a[i] + b[i];
}

// Host entry point: host pointers in and out (what the candidate hands over).
void residual_forward(float* out, const float* a, const float* b, long n) {
  simt::DeviceBuffer<float> d_a(n), d_b(n), d_out(n);
  d_a.upload(a, n);
  d_b.upload(b, n);
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  simt::launch(residual_kernel, dim3(blocks), dim3(kThreads), 0, nullptr, d_a.data(), d_b.data(),
               d_out.data(), n);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string residual_unavailable() { return simt::device_error(); }
