// cuBLAS's GEMMs on the CPU, for the kernel files that call them around their own kernels (a
// repository's matmul benchmark against cuBLAS, a forward pass whose projections are cuBLAS calls):
// handles and their settings, cublasSgemm, cublasSgemmStridedBatched, cublasGemmEx and
// cublasGemmStridedBatchedEx with f32, f16 or bf16 inputs and outputs and f32 accumulation.
// Correct, not fast: each output is one f32 sum over k, term after term with a fused multiply-add,
// in column-major order as cuBLAS defines it. Included by simt/cuda_compat/cublas_v2.h after the
// toolkit's header; each name is redirected by macro as simt/cuda_host_api.h's are.
//
// What cuBLAS would round differently is modelled where the settings ask for it: TF32 tensor-op
// math (cublasSetMathMode CUBLAS_TF32_TENSOR_OP_MATH, or CUBLAS_COMPUTE_32F_FAST_TF32) rounds each
// input to TF32 (round to nearest, ties away from zero, as PTX's cvt.rna.tf32.f32), and
// CUBLAS_COMPUTE_32F_FAST_16F/16BF round each input to f16/bf16. A parameter this does not take
// (another data type or compute type, a bad leading dimension) fails the call with
// CUBLAS_STATUS_NOT_SUPPORTED or CUBLAS_STATUS_INVALID_VALUE, and a line on stderr naming the call
// and the parameter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace simt::cublas {

struct Handle {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};
inline Handle* handle_of(cublasHandle_t h) { return reinterpret_cast<Handle*>(h); }

// How the inputs are rounded before the product.
enum class InputRounding { none, tf32, f16, bf16 };

inline cublasStatus_t refuse(cublasStatus_t status, const char* call, const char* what) {
  std::fprintf(stderr, "simt cuBLAS: %s: %s\n", call, what);
  return status;
}

inline float tf32(float x) {
  if (!std::isfinite(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & ~0x1FFFu;  // 10 mantissa bits kept; ties away from zero
  std::memcpy(&x, &u, 4);
  return x;
}

inline float round_input(float x, InputRounding r) {
  switch (r) {
    case InputRounding::tf32: return tf32(x);
    case InputRounding::f16: return __half2float(__float2half_rn(x));
    case InputRounding::bf16: return __bfloat162float(__float2bfloat16_rn(x));
    default: return x;
  }
}

inline bool supported_type(cudaDataType t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }

inline float load(const void* p, cudaDataType t, std::int64_t i) {
  switch (t) {
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

inline void store(void* p, cudaDataType t, std::int64_t i, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

struct Operand {
  const void* p;
  cudaDataType type;
  int ld;
  long long stride;
};

// C = alpha op(A) op(B) + beta C for every batch, column-major; C is not read where beta is 0.
inline cublasStatus_t gemm(const char* call, cublasHandle_t handle, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k, const float* alpha, Operand a,
                           Operand b, const float* beta, void* c, cudaDataType c_type, int ldc,
                           long long c_stride, int batches, InputRounding rounding) {
  if (handle == nullptr)
    return refuse(CUBLAS_STATUS_NOT_INITIALIZED, call, "handle is null (cublasCreate first)");
  if (ta == CUBLAS_OP_CONJG || tb == CUBLAS_OP_CONJG)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call, "transa/transb CUBLAS_OP_CONJG is not supported");
  if (!supported_type(a.type) || !supported_type(b.type) || !supported_type(c_type))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
                  "Atype/Btype/Ctype: only CUDA_R_32F, CUDA_R_16F and CUDA_R_16BF are supported on the CPU");
  if (m < 0 || n < 0 || k < 0 || batches < 0)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "m, n, k or batchCount < 0");
  const bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;
  if (a.ld < (at ? k : m) || a.ld < 1)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "lda is less than the rows of A");
  if (b.ld < (bt ? n : k) || b.ld < 1)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "ldb is less than the rows of B");
  if (ldc < m || ldc < 1) return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "ldc is less than m");
  if (alpha == nullptr || beta == nullptr)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, call, "alpha or beta is null");
  if (handle_of(handle)->math == CUBLAS_TF32_TENSOR_OP_MATH && rounding == InputRounding::none &&
      a.type == CUDA_R_32F && b.type == CUDA_R_32F)
    rounding = InputRounding::tf32;
  const float al = *alpha, be = *beta;
  for (int batch = 0; batch < batches; ++batch) {
    const std::int64_t ao = batch * a.stride, bo = batch * b.stride, co = batch * c_stride;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        float acc = 0;
        for (int l = 0; l < k; ++l) {
          const float x =
              load(a.p, a.type, ao + (at ? l + std::int64_t(i) * a.ld : i + std::int64_t(l) * a.ld));
          const float y =
              load(b.p, b.type, bo + (bt ? j + std::int64_t(l) * b.ld : l + std::int64_t(j) * b.ld));
          acc = std::fmaf(round_input(x, rounding), round_input(y, rounding), acc);
        }
        const std::int64_t at_c = co + i + std::int64_t(j) * ldc;
        store(c, c_type, at_c, be == 0 ? al * acc : std::fmaf(be, load(c, c_type, at_c), al * acc));
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// The input rounding of a compute type, or false (said on stderr) for one the CPU does not take.
inline bool rounding_of(const char* call, cublasComputeType_t t, InputRounding& r) {
  switch (t) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: r = InputRounding::none; return true;
    case CUBLAS_COMPUTE_32F_FAST_TF32: r = InputRounding::tf32; return true;
    case CUBLAS_COMPUTE_32F_FAST_16F: r = InputRounding::f16; return true;
    case CUBLAS_COMPUTE_32F_FAST_16BF: r = InputRounding::bf16; return true;
    default:
      refuse(CUBLAS_STATUS_NOT_SUPPORTED, call,
             "computeType: only CUBLAS_COMPUTE_32F (and its _PEDANTIC and _FAST_TF32/16F/16BF forms) is "
             "supported "
             "on the CPU");
      return false;
  }
}

}  // namespace simt::cublas

inline cublasStatus_t simt_cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasHandle_t>(new ::simt::cublas::Handle{});
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasDestroy(cublasHandle_t handle) {
  delete ::simt::cublas::handle_of(handle);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  ::simt::cublas::handle_of(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr || stream == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = ::simt::cublas::handle_of(handle)->stream;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  ::simt::cublas::handle_of(handle)->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (handle == nullptr || mode == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = ::simt::cublas::handle_of(handle)->math;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  ::simt::cublas::handle_of(handle)->pointer_mode = mode;  // host and device memory are one here
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t simt_cublasGetPointerMode(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (handle == nullptr || mode == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = ::simt::cublas::handle_of(handle)->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}
// A workspace is accepted and not used.
inline cublasStatus_t simt_cublasSetWorkspace(cublasHandle_t handle, void*, std::size_t) {
  return handle == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_SUCCESS;
}
inline const char* simt_cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported (SIMT CPU cuBLAS)";
    default: return "unknown cuBLAS status (SIMT CPU cuBLAS)";
  }
}

inline cublasStatus_t simt_cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                       int m, int n, int k, const float* alpha, const float* A, int lda,
                                       const float* B, int ldb, const float* beta, float* C, int ldc) {
  return ::simt::cublas::gemm("cublasSgemm", handle, ta, tb, m, n, k, alpha, {A, CUDA_R_32F, lda, 0},
                              {B, CUDA_R_32F, ldb, 0}, beta, C, CUDA_R_32F, ldc, 0, 1,
                              ::simt::cublas::InputRounding::none);
}
inline cublasStatus_t simt_cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                                     cublasOperation_t tb, int m, int n, int k,
                                                     const float* alpha, const float* A, int lda,
                                                     long long strideA, const float* B, int ldb,
                                                     long long strideB, const float* beta, float* C, int ldc,
                                                     long long strideC, int batches) {
  return ::simt::cublas::gemm("cublasSgemmStridedBatched", handle, ta, tb, m, n, k, alpha,
                              {A, CUDA_R_32F, lda, strideA}, {B, CUDA_R_32F, ldb, strideB}, beta, C,
                              CUDA_R_32F, ldc, strideC, batches, ::simt::cublas::InputRounding::none);
}
inline cublasStatus_t simt_cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, long long strideA, const void* B, cudaDataType Btype, int ldb,
    long long strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long strideC, int batches,
    cublasComputeType_t compute, cublasGemmAlgo_t) {
  ::simt::cublas::InputRounding r{};
  if (!::simt::cublas::rounding_of("cublasGemmStridedBatchedEx", compute, r))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return ::simt::cublas::gemm("cublasGemmStridedBatchedEx", handle, ta, tb, m, n, k,
                              static_cast<const float*>(alpha), {A, Atype, lda, strideA},
                              {B, Btype, ldb, strideB}, static_cast<const float*>(beta), C, Ctype, ldc,
                              strideC, batches, r);
}
inline cublasStatus_t simt_cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                        int m, int n, int k, const void* alpha, const void* A,
                                        cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                                        int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                        cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return simt_cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                                         beta, C, Ctype, ldc, 0, 1, compute, algo);
}
// The older spelling with a cudaDataType compute type (the toolkit's header migrates it the same
// way: CUDA_R_32F is CUBLAS_COMPUTE_32F, or its _PEDANTIC form under CUBLAS_PEDANTIC_MATH).
inline cublasStatus_t simt_cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                        int m, int n, int k, const void* alpha, const void* A,
                                        cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
                                        int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                        cudaDataType compute, cublasGemmAlgo_t algo) {
  if (compute != CUDA_R_32F)
    return ::simt::cublas::refuse(CUBLAS_STATUS_NOT_SUPPORTED, "cublasGemmEx",
                                  "computeType: only CUDA_R_32F is supported on the CPU");
  return simt_cublasGemmEx(handle, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                           CUBLAS_COMPUTE_32F, algo);
}

// cublas_v2.h maps the plain names onto the _v2 ones; both end here.
#define cublasCreate_v2 simt_cublasCreate
#define cublasDestroy_v2 simt_cublasDestroy
#define cublasSetStream_v2 simt_cublasSetStream
#define cublasGetStream_v2 simt_cublasGetStream
#define cublasSetPointerMode_v2 simt_cublasSetPointerMode
#define cublasGetPointerMode_v2 simt_cublasGetPointerMode
#define cublasSetWorkspace_v2 simt_cublasSetWorkspace
#define cublasSgemm_v2 simt_cublasSgemm
#define cublasSetMathMode simt_cublasSetMathMode
#define cublasGetMathMode simt_cublasGetMathMode
#define cublasGetStatusString simt_cublasGetStatusString
#define cublasSgemmStridedBatched simt_cublasSgemmStridedBatched
#define cublasGemmEx simt_cublasGemmEx
#define cublasGemmStridedBatchedEx simt_cublasGemmStridedBatchedEx
