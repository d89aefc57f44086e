// RMSNorm: y[r, :] = half(x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * (w_offset + w)), x and y
// f16, w f32. w_offset is 0 for the usual form and 1 for Qwen3-Next's (1 + w), whose stored
// weight starts at 0: the 1 is added in f32 here, as HF does, not folded into a rounded copy.
// One block per row; each thread sums the squares of a strided slice, the block reduces
// them in shared memory (warp shuffles, then one partial per warp), then every thread
// scales its slice. Used for attn_norm, ffn_norm and final_norm.
#include "common.cuh"

namespace DSK_NS {

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
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(width) + eps);
  for (int c = static_cast<int>(threadIdx.x); c < width; c += static_cast<int>(blockDim.x))
    y[base + c] = __float2half_rn(__half2float(x[base + c]) * inv * (w_offset + w[c]));
}

void rmsnorm(const void* x, const float* w, float w_offset, void* y, int rows, int width, float eps) {
  const int threads = width >= 256 ? 256 : round_up32(width);
  simt::launch(rmsnorm_kernel, dim3(rows), dim3(threads), 0, nullptr, static_cast<const __half*>(x), w,
               w_offset, static_cast<__half*>(y), width, eps);
}

}  // namespace DSK_NS
