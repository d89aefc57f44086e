// GELU in f16, as a code generator writes a kernel for GPT-2's MLP: one .cu for nvcc, __half in and
// out, the math in f32 (GPT-2's "gelu_new", the tanh approximation). No Driftscope header, no build
// files: tests/install/bare_cu_kinds_e2e.py hands it to `driftscope check --candidate` with a stage
// map of `kind: gelu` and `dtype: f16`, and plants a bug in a copy.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t err = (call);                                                                        \
    if (err != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err)); \
  } while (0)

__global__ void gelu_f16_kernel(__half* out, const __half* x, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = __half2float(x[i]);
  const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);  // sqrt(2 / pi) (x + 0.044715 x^3)
  out[i] = __float2half(0.5f * v * (1.0f + tanhf(inner)));
}

void my_gelu_f16(__half* out, const __half* x, long n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(__half);
  __half *d_x = nullptr, *d_out = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, bytes));
  CUDA_CHECK(cudaMalloc(&d_out, bytes));
  CUDA_CHECK(cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice));
  const int threads = 256;
  gelu_f16_kernel<<<static_cast<int>((n + threads - 1) / threads), threads>>>(d_out, d_x, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaFree(d_out));
}
