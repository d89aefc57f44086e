// mutant:layernorm-no-mean-sub: LayerNorm takes the variance as mean(x^2), without subtracting the mean
// first: too large by mean^2, while the output is still centred. The kernel of kernels/layernorm.cu with that
// one change, marked "planted"; the rest is the production code as it was when the mutant was written.
// docs/mutants.md says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_layernorm_no_mean_sub {

__global__ void layernorm_kernel(const __half* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, __half* __restrict__ y, int width, float eps) {
  __shared__ float scratch[32];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * width;
  const int stride = static_cast<int>(blockDim.x);
  float sum = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < width; c += stride) sum += __half2float(x[base + c]);
  const float mean = block_reduce<false>(sum, scratch) / static_cast<float>(width);

  float ss = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < width; c += stride) {
    const float d = __half2float(x[base + c]);  // planted: the mean not subtracted
    ss += d * d;
  }
  const float var = block_reduce<false>(ss, scratch) / static_cast<float>(width);
  const float inv = 1.0f / sqrtf(var + eps);
  for (int c = static_cast<int>(threadIdx.x); c < width; c += stride)
    y[base + c] = __float2half_rn((__half2float(x[base + c]) - mean) * inv * w[c] + b[c]);
}

void layernorm(const void* x, const float* w, const float* b, void* y, int rows, int width, float eps) {
  const int threads = width >= 256 ? 256 : round_up32(width);
  simt::launch(layernorm_kernel, dim3(rows), dim3(threads), 0, nullptr, static_cast<const __half*>(x), w, b,
               static_cast<__half*>(y), width, eps);
}

void plant(dsk::KernelTable& t) { t.layernorm = layernorm; }

}  // namespace mutant_layernorm_no_mean_sub
}  // namespace DSK_NS
