#include "simt/simt_fp16.h"
#include "test_kernels.h"

namespace simt_test {
namespace {

__global__ void half_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const __half a = __float2half_rn(i < n ? in[i] : 0.0f);
  const __half f = __hfma(a, a, hexp(a));
  __half s = a;
  for (int offset = 16; offset > 0; offset >>= 1) s = __hadd(s, __shfl_xor_sync(0xffffffffu, s, offset));
  const __nv_bfloat16 bf = __float2bfloat16_rn(__half2float(hsqrt(__habs(a))));
  if (i < n) out[i] = __half2float(f) + __half2float(s) * 1000.0f + __bfloat162float(bf) * 0.0f;
}

}  // namespace

void half_ops(const float* in, float* out, int n) {
  simt::launch(half_kernel, dim3((n + 31) / 32), dim3(32), 0, nullptr, in, out, n);
}

}  // namespace simt_test
