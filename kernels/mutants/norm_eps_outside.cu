// mutant:norm-eps-outside: RMSNorm adds eps outside the square root, 1 / (sqrt(mean(x^2)) + eps): the same as
// inside wherever mean(x^2) >> eps. The kernel of kernels/rmsnorm.cu with that one change, marked "planted";
// the rest is the production code as it was when the mutant was written. docs/mutants.md says where the
// harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_norm_eps_outside {

__global__ void rmsnorm_kernel(const __half* __restrict__ x, const float* __restrict__ w, float w_offset,
                               __half* __restrict__ y, int width, float eps) {
  __shared__ float scratch[32];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * width;
  float ss = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < width; c += static_cast<int>(blockDim.x)) {
    const float v = __half2float(x[base + c]);
    ss += v * v;
  }
  ss = block_reduce<false>(ss, scratch);
  const float inv = 1.0f / (sqrtf(ss / static_cast<float>(width)) + eps);  // planted: eps outside
  for (int c = static_cast<int>(threadIdx.x); c < width; c += static_cast<int>(blockDim.x))
    y[base + c] = __float2half_rn(__half2float(x[base + c]) * inv * (w_offset + w[c]));
}

void rmsnorm(const void* x, const float* w, float w_offset, void* y, int rows, int width, float eps) {
  const int threads = width >= 256 ? 256 : round_up32(width);
  simt::launch(rmsnorm_kernel, dim3(rows), dim3(threads), 0, nullptr, static_cast<const __half*>(x), w,
               w_offset, static_cast<__half*>(y), width, eps);
}

void plant(dsk::KernelTable& t) { t.rmsnorm = rmsnorm; }

}  // namespace mutant_norm_eps_outside
}  // namespace DSK_NS
