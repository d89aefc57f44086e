// LayerNorm with bias (GPT-2's ln_1, ln_2 and ln_f; nn.LayerNorm, biased variance):
//   mean = sum(x[r, :]) / width
//   var  = sum((x[r, :] - mean)^2) / width
//   y[r, :] = half((x[r, :] - mean) * rsqrt(var + eps) * w + b)
// x and y f16, w and b f32. One block per row, in two reductions: the block sums the row
// for the mean, then sums the squared deviations from it. Two passes over the (cached) row
// instead of one pass accumulating sum and sum of squares: E[x^2] - mean^2 cancels
// catastrophically in f32 when |mean| is large against the spread, which a residual stream
// can be.
#include "common.cuh"

namespace DSK_NS {

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
    const float d = __half2float(x[base + c]) - mean;
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

}  // namespace DSK_NS
