// cuBLASLt's matmul on the CPU, as kernel files use it for their projections (a handle, a matmul
// descriptor with transposes and a bias or GELU epilogue, column-major layouts, one heuristic):
// D = epilogue(alpha op(A) op(B) + beta C + bias) through simt/cublas_host.h's GEMM, so the same
// sums, input roundings (CUBLAS_COMPUTE_32F_FAST_TF32 ...) and types (f32, f16, bf16). The bias
// has one value per row of D, added before the activation; GELU is the tanh form. Anything else a
// descriptor or layout is given (another order, an aux output, scale pointers, another epilogue)
// fails the call that sets it with CUBLAS_STATUS_NOT_SUPPORTED and a line on stderr naming it.
#pragma once

#include <cstdint>
#include <vector>

#include "simt/cublas_host.h"

namespace simt::cublaslt {

struct MatmulDesc {
  cublasComputeType_t compute;
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  cudaDataType bias_type = CUDA_R_32F;
  bool bias_type_set = false;
};
struct Layout {
  cudaDataType type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  int batch = 1;
  std::int64_t stride = 0;
};
inline MatmulDesc* desc_of(cublasLtMatmulDesc_t d) { return reinterpret_cast<MatmulDesc*>(d); }
inline Layout* layout_of(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }

template <class T>
bool read_attr(const void* buf, std::size_t size, T& out) {
  if (buf == nullptr || size != sizeof(T)) return false;
  std::memcpy(&out, buf, sizeof(T));
  return true;
}

inline cublasStatus_t bad_size(const char* call, const char* attr) {
  std::fprintf(stderr, "simt cuBLAS: %s: %s: the buffer is null or not the attribute's size\n", call, attr);
  return CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace simt::cublaslt

inline cublasStatus_t simt_cublasLtCreate(cublasLtHandle_t* handle) {
  return simt_cublasCreate(reinterpret_cast<cublasHandle_t*>(handle));
}
inline cublasStatus_t simt_cublasLtDestroy(cublasLtHandle_t handle) {
  return simt_cublasDestroy(reinterpret_cast<cublasHandle_t>(handle));
}

inline cublasStatus_t simt_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                                    cudaDataType_t scale) {
  ::simt::cublas::InputRounding r{};
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!::simt::cublas::rounding_of("cublasLtMatmulDescCreate", compute, r))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (scale != CUDA_R_32F)
    return ::simt::cublas::refuse(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulDescCreate",
                                  "scaleType: only CUDA_R_32F is supported on the CPU");
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new ::simt::cublaslt::MatmulDesc{compute});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete ::simt::cublaslt::desc_of(desc);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                          cublasLtMatmulDescAttributes_t attr,
                                                          const void* buf, std::size_t size) {
  using namespace ::simt::cublaslt;
  constexpr const char* call = "cublasLtMatmulDescSetAttribute";
  if (desc == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  MatmulDesc& d = *desc_of(desc);
  std::int32_t i32 = 0;
  std::uint32_t u32 = 0;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATMUL_DESC_TRANSA");
      d.ta = cublasOperation_t(i32);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATMUL_DESC_TRANSB");
      d.tb = cublasOperation_t(i32);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (!read_attr(buf, size, u32)) return bad_size(call, "CUBLASLT_MATMUL_DESC_EPILOGUE");
      if (u32 != CUBLASLT_EPILOGUE_DEFAULT && u32 != CUBLASLT_EPILOGUE_BIAS &&
          u32 != CUBLASLT_EPILOGUE_GELU && u32 != CUBLASLT_EPILOGUE_GELU_BIAS &&
          u32 != CUBLASLT_EPILOGUE_RELU && u32 != CUBLASLT_EPILOGUE_RELU_BIAS)
        return ::simt::cublas::refuse(
            CUBLAS_STATUS_NOT_SUPPORTED, call,
            "CUBLASLT_MATMUL_DESC_EPILOGUE: only DEFAULT, BIAS, RELU, RELU_BIAS, GELU and "
            "GELU_BIAS are supported on the CPU");
      d.epilogue = u32;
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      if (!read_attr(buf, size, d.bias)) return bad_size(call, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE");
      d.bias_type = cudaDataType(i32);
      d.bias_type_set = true;
      if (!::simt::cublas::supported_type(d.bias_type))
        return ::simt::cublas::refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
                                      "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: only CUDA_R_32F, CUDA_R_16F and "
                                      "CUDA_R_16BF are supported on the CPU");
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATMUL_DESC_POINTER_MODE");
      if (i32 != 0 && i32 != 1)
        return ::simt::cublas::refuse(
            CUBLAS_STATUS_NOT_SUPPORTED, call,
            "CUBLASLT_MATMUL_DESC_POINTER_MODE: only HOST and DEVICE (scalar alpha and "
            "beta) are supported on the CPU");
      return CUBLAS_STATUS_SUCCESS;
    default: {
      char what[160];
      std::snprintf(what, sizeof what, "matmul descriptor attribute %d is not supported on the CPU",
                    int(attr));
      return ::simt::cublas::refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, what);
    }
  }
}

inline cublasStatus_t simt_cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                                      std::uint64_t rows, std::uint64_t cols,
                                                      std::int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!::simt::cublas::supported_type(type))
    return ::simt::cublas::refuse(
        CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatrixLayoutCreate",
        "type: only CUDA_R_32F, CUDA_R_16F and CUDA_R_16BF are supported on the CPU");
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new ::simt::cublaslt::Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete ::simt::cublaslt::layout_of(layout);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                            cublasLtMatrixLayoutAttribute_t attr,
                                                            const void* buf, std::size_t size) {
  using namespace ::simt::cublaslt;
  constexpr const char* call = "cublasLtMatrixLayoutSetAttribute";
  if (layout == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Layout& l = *layout_of(layout);
  std::int32_t i32 = 0;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT");
      l.batch = i32;
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      if (!read_attr(buf, size, l.stride))
        return bad_size(call, "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET");
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      if (!read_attr(buf, size, i32)) return bad_size(call, "CUBLASLT_MATRIX_LAYOUT_ORDER");
      if (i32 != CUBLASLT_ORDER_COL)
        return ::simt::cublas::refuse(
            CUBLAS_STATUS_NOT_SUPPORTED, call,
            "CUBLASLT_MATRIX_LAYOUT_ORDER: only CUBLASLT_ORDER_COL is supported on the CPU");
      return CUBLAS_STATUS_SUCCESS;
    default: {
      char what[160];
      std::snprintf(what, sizeof what, "matrix layout attribute %d is not supported on the CPU", int(attr));
      return ::simt::cublas::refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, what);
    }
  }
}

// Preferences (a workspace limit, reduction schemes) steer a GPU's algorithm choice: accepted.
inline cublasStatus_t simt_cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new char);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete reinterpret_cast<char*>(pref);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                cublasLtMatmulPreferenceAttributes_t,
                                                                const void*, std::size_t) {
  return pref == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_SUCCESS;
}
// One algorithm, which needs no workspace.
inline cublasStatus_t simt_cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t,
                                                          cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                          cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                          cublasLtMatmulPreference_t, int requested,
                                                          cublasLtMatmulHeuristicResult_t results[],
                                                          int* returned) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested < 1 || results == nullptr || returned == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t simt_cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                          const void* alpha, const void* A, cublasLtMatrixLayout_t a_layout,
                                          const void* B, cublasLtMatrixLayout_t b_layout, const void* beta,
                                          const void* C, cublasLtMatrixLayout_t c_layout, void* D,
                                          cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t*, void*,
                                          std::size_t, cudaStream_t) {
  using namespace ::simt::cublaslt;
  constexpr const char* call = "cublasLtMatmul";
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (desc == nullptr || a_layout == nullptr || b_layout == nullptr || c_layout == nullptr ||
      d_layout == nullptr)
    return ::simt::cublas::refuse(CUBLAS_STATUS_INVALID_VALUE, call, "a descriptor or layout is null");
  const MatmulDesc& d = *desc_of(desc);
  const Layout &la = *layout_of(a_layout), &lb = *layout_of(b_layout), &lc = *layout_of(c_layout),
               &ld = *layout_of(d_layout);
  const bool at = d.ta != CUBLAS_OP_N, bt = d.tb != CUBLAS_OP_N;
  const std::uint64_t m = at ? la.cols : la.rows, k = at ? la.rows : la.cols;
  const std::uint64_t kb = bt ? lb.cols : lb.rows, n = bt ? lb.rows : lb.cols;
  if (k != kb || ld.rows != m || ld.cols != n || lc.rows != m || lc.cols != n)
    return ::simt::cublas::refuse(
        CUBLAS_STATUS_INVALID_VALUE, call,
        "the layouts' shapes do not agree (op(A) m x k, op(B) k x n, C and D m x n)");
  if (la.batch != ld.batch || lb.batch != ld.batch || lc.batch != ld.batch)
    return ::simt::cublas::refuse(CUBLAS_STATUS_INVALID_VALUE, call, "the layouts' batch counts differ");
  if (lc.type != ld.type || lc.ld != ld.ld || (C != D && lc.stride != ld.stride))
    return ::simt::cublas::refuse(
        CUBLAS_STATUS_NOT_SUPPORTED, call,
        "C and D of another type or leading dimension are not supported on the CPU");
  ::simt::cublas::InputRounding r{};
  if (!::simt::cublas::rounding_of(call, d.compute, r)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool bias = (d.epilogue & CUBLASLT_EPILOGUE_BIAS) != 0;
  if (bias && d.bias == nullptr)
    return ::simt::cublas::refuse(
        CUBLAS_STATUS_INVALID_VALUE, call,
        "the epilogue adds a bias but CUBLASLT_MATMUL_DESC_BIAS_POINTER is not set");
  const float be = beta ? *static_cast<const float*>(beta) : 0.0f;
  // C into D first where they differ: the GEMM then accumulates into D.
  if (C != D && be != 0)
    for (int batch = 0; batch < ld.batch; ++batch)
      for (std::uint64_t j = 0; j < n; ++j)
        for (std::uint64_t i = 0; i < m; ++i) {
          const std::int64_t at_d = batch * ld.stride + std::int64_t(i + j * ld.ld);
          ::simt::cublas::store(
              D, ld.type, at_d,
              ::simt::cublas::load(C, lc.type, batch * lc.stride + std::int64_t(i + j * lc.ld)));
        }
  const cublasStatus_t s = ::simt::cublas::gemm(
      call, reinterpret_cast<cublasHandle_t>(handle), d.ta, d.tb, int(m), int(n), int(k),
      static_cast<const float*>(alpha), {A, la.type, int(la.ld), la.stride},
      {B, lb.type, int(lb.ld), lb.stride}, &be, D, ld.type, int(ld.ld), ld.stride, ld.batch, r);
  if (s != CUBLAS_STATUS_SUCCESS || d.epilogue == CUBLASLT_EPILOGUE_DEFAULT) return s;
  const cudaDataType bias_type = d.bias_type_set ? d.bias_type : ld.type;
  for (int batch = 0; batch < ld.batch; ++batch)
    for (std::uint64_t j = 0; j < n; ++j)
      for (std::uint64_t i = 0; i < m; ++i) {
        const std::int64_t at_d = batch * ld.stride + std::int64_t(i + j * ld.ld);
        float v = ::simt::cublas::load(D, ld.type, at_d);
        if (bias) v += ::simt::cublas::load(d.bias, bias_type, std::int64_t(i));
        if (d.epilogue & CUBLASLT_EPILOGUE_RELU) v = v > 0 ? v : 0;
        if (d.epilogue & CUBLASLT_EPILOGUE_GELU)
          v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
        ::simt::cublas::store(D, ld.type, at_d, v);
      }
  return CUBLAS_STATUS_SUCCESS;
}

#define cublasLtCreate simt_cublasLtCreate
#define cublasLtDestroy simt_cublasLtDestroy
#define cublasLtMatmulDescCreate simt_cublasLtMatmulDescCreate
#define cublasLtMatmulDescDestroy simt_cublasLtMatmulDescDestroy
#define cublasLtMatmulDescSetAttribute simt_cublasLtMatmulDescSetAttribute
#define cublasLtMatrixLayoutCreate simt_cublasLtMatrixLayoutCreate
#define cublasLtMatrixLayoutDestroy simt_cublasLtMatrixLayoutDestroy
#define cublasLtMatrixLayoutSetAttribute simt_cublasLtMatrixLayoutSetAttribute
#define cublasLtMatmulPreferenceCreate simt_cublasLtMatmulPreferenceCreate
#define cublasLtMatmulPreferenceDestroy simt_cublasLtMatmulPreferenceDestroy
#define cublasLtMatmulPreferenceSetAttribute simt_cublasLtMatmulPreferenceSetAttribute
#define cublasLtMatmulAlgoGetHeuristic simt_cublasLtMatmulAlgoGetHeuristic
#define cublasLtMatmul simt_cublasLtMatmul
