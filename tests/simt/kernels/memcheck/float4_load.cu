// Vector loads of four floats at an offset the caller picks: a float4 must be 16-byte aligned on a
// GPU (a misaligned one is an error there), while the CPU loads it anyway.
#include "common.h"
#include "memcheck_cases.h"

namespace memcheck_cases {
namespace {

__global__ void sum4_kernel(const float* x, float* out, int offset) {
  const int t = static_cast<int>(threadIdx.x);
  const float4 v = *reinterpret_cast<const float4*>(x + 4 * t + offset);  // @mem:float4
  out[t] = (v.x + v.y) + (v.z + v.w);
}

}  // namespace

std::vector<float> float4_load(int offset) {
  constexpr int threads = 16, n = 4 * threads + 8;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  float *dx = nullptr, *dout = nullptr;
  MEMCHECK_CUDA(cudaMalloc(&dx, n * sizeof(float)));
  MEMCHECK_CUDA(cudaMalloc(&dout, threads * sizeof(float)));
  MEMCHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  sum4_kernel<<<1, threads>>>(dx, dout, offset);
  std::vector<float> out(threads);
  MEMCHECK_CUDA(cudaMemcpy(out.data(), dout, threads * sizeof(float), cudaMemcpyDeviceToHost));
  MEMCHECK_CUDA(cudaFree(dx));
  MEMCHECK_CUDA(cudaFree(dout));
  return out;
}

}  // namespace memcheck_cases
