// Half and bfloat16 for kernels on both backends. Under a host compiler the
// toolkit's cuda_fp16.h / cuda_bf16.h host paths supply types, conversions and
// arithmetic; the device-only intrinsics below are float-based shims.
#pragma once

#include "simt/simt.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if !defined(__CUDACC__)

#include <cmath>

// Race findings print these arguments' elements as numbers.
namespace simt::detail {
template <>
struct elem_kind<__half> {
  static constexpr Elem value = Elem::f16;
};
template <>
struct elem_kind<__nv_bfloat16> {
  static constexpr Elem value = Elem::bf16;
};
}  // namespace simt::detail

// Rounded once to float and again to half/bf16: may differ from the GPU's
// single rounding in the last bit (see docs/simt.md).
inline __half __hfma(__half a, __half b, __half c) {
  return __float2half_rn(std::fma(__half2float(a), __half2float(b), __half2float(c)));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __half hexp(__half a) { return __float2half_rn(std::exp(__half2float(a))); }
inline __half hexp2(__half a) { return __float2half_rn(std::exp2(__half2float(a))); }
inline __half hlog(__half a) { return __float2half_rn(std::log(__half2float(a))); }
inline __half hsqrt(__half a) { return __float2half_rn(std::sqrt(__half2float(a))); }
inline __half hrsqrt(__half a) { return __float2half_rn(1.0f / std::sqrt(__half2float(a))); }
inline __half hrcp(__half a) { return __float2half_rn(1.0f / __half2float(a)); }
inline __half2 h2exp(__half2 a) { return __halves2half2(hexp(__low2half(a)), hexp(__high2half(a))); }
inline __half2 h2sqrt(__half2 a) { return __halves2half2(hsqrt(__low2half(a)), hsqrt(__high2half(a))); }
inline __half2 h2rsqrt(__half2 a) { return __halves2half2(hrsqrt(__low2half(a)), hrsqrt(__high2half(a))); }

inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __float2bfloat16_rn(std::fma(__bfloat162float(a), __bfloat162float(b), __bfloat162float(c)));
}
inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __float2bfloat16_rn(std::exp(__bfloat162float(a))); }
inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __float2bfloat16_rn(std::sqrt(__bfloat162float(a))); }
inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) {
  return __float2bfloat16_rn(1.0f / std::sqrt(__bfloat162float(a)));
}

#endif
