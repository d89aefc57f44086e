// SwiGLU activation, f32: out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
//
// One thread per element: the simplest elementwise kernel. The same file runs on the CPU
// (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

// Host entry point: host pointers in and out (what the candidate hands over).
void swiglu_forward(float* out, const float* gate, const float* up, long n) {
  simt::DeviceBuffer<float> d_gate(n), d_up(n), d_out(n);
  d_gate.upload(gate, n);
  d_up.upload(up, n);
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  simt::launch(swiglu_kernel, dim3(blocks), dim3(kThreads), 0, nullptr, d_gate.data(), d_up.data(),
               d_out.data(), n);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string swiglu_unavailable() { return simt::device_error(); }
