// GELU, f32, as GPT-2 computes it ("gelu_new", the tanh approximation):
//   out[i] = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))),  x = x[i].
// Not the erf form (nn.GELU's default): the two differ by up to about 1e-3, well above the noise
// of f16 storage, so a kernel with the other form fails the gelu stage.
//
// One thread per element. The same file runs on the CPU (Driftscope's SIMT runtime) and, built by
// nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;

__global__ void gelu_kernel(const float* x, float* out, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  const float sqrt_2_over_pi = 0.7978845608f;
  out[i] = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * (v + 0.044715f * v * v * v)));
}

// Host entry point: host pointers in and out (what the candidate hands over).
void gelu_forward(float* out, const float* x, long n) {
  simt::DeviceBuffer<float> d_x(n), d_out(n);
  d_x.upload(x, n);
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  simt::launch(gelu_kernel, dim3(blocks), dim3(kThreads), 0, nullptr, d_x.data(), d_out.data(), n);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string gelu_unavailable() { return simt::device_error(); }
