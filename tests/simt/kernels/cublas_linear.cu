// Projections by cuBLAS with a kernel of the file's own between them, as repositories' forward
// passes are written (cublas_linear.h). driftscope_add_simt_kernel() builds it unchanged for the
// CPU, its cuBLAS calls computed by the SIMT runtime's CPU GEMM; nvcc builds it as it is.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cublas_linear.h"

#define CHECK_CUDA(call)                                                                                     \
  do {                                                                                                       \
    const cudaError_t err_ = (call);                                                                         \
    if (err_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err_)); \
  } while (0)
#define CHECK_CUBLAS(call)                                                                      \
  do {                                                                                          \
    const cublasStatus_t st_ = (call);                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(#call) + " failed"); \
  } while (0)

namespace cublas_linear {
namespace {

__global__ void add_bias(float* y, const float* bias, int T, int out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < T * out) y[i] += bias[i % out];
}

template <class T>
T* to_device(const T* host, size_t n) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

void linear_sgemm(float* y, const float* x, const float* w, const float* bias, int T, int in, int out,
                  bool tf32) {
  float* d_x = to_device(x, size_t(T) * in);
  float* d_w = to_device(w, size_t(out) * in);
  float* d_b = to_device(bias, size_t(out));
  float* d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, size_t(T) * out * sizeof(float)));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(
      cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, T, in, &one, d_w, in, d_x, in, &zero, d_y, out));
  add_bias<<<(T * out + 255) / 256, 256>>>(d_y, d_b, T, out);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(y, d_y, size_t(T) * out * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUBLAS(cublasDestroy(handle));
  for (float* p : {d_x, d_w, d_b, d_y}) CHECK_CUDA(cudaFree(p));
}

void linear_gemm_ex_f16(float* y, const float* x, const float* w, int T, int in, int out) {
  std::vector<__half> hx(size_t(T) * in), hw(size_t(out) * in);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = __float2half(x[i]);
  for (size_t i = 0; i < hw.size(); ++i) hw[i] = __float2half(w[i]);
  __half* d_x = to_device(hx.data(), hx.size());
  __half* d_w = to_device(hw.data(), hw.size());
  float* d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, size_t(T) * out * sizeof(float)));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, T, in, &one, d_w, CUDA_R_16F, in, d_x,
                            CUDA_R_16F, in, &zero, d_y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  CHECK_CUDA(cudaMemcpy(y, d_y, size_t(T) * out * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_w));
  CHECK_CUDA(cudaFree(d_y));
}

void linear_batched(float* y, const float* x, const float* w, int T, int in, int out) {
  float* d_x = to_device(x, 2 * size_t(T) * in);
  float* d_w = to_device(w, 2 * size_t(out) * in);
  float* d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, 2 * size_t(T) * out * sizeof(float)));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, T, in, &one, d_w, CUDA_R_32F,
                                          in, (long long)out * in, d_x, CUDA_R_32F, in, (long long)T * in,
                                          &zero, d_y, CUDA_R_32F, out, (long long)T * out, 2,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CHECK_CUDA(cudaMemcpy(y, d_y, 2 * size_t(T) * out * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUBLAS(cublasDestroy(handle));
  for (float* p : {d_x, d_w, d_y}) CHECK_CUDA(cudaFree(p));
}

void linear_lt_gelu_bias(float* y, const float* x, const float* w, const float* bias, int T, int in, int out,
                         bool tf32) {
  float* d_x = to_device(x, size_t(T) * in);
  float* d_w = to_device(w, size_t(out) * in);
  float* d_b = to_device(bias, size_t(out));
  float* d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_y, size_t(T) * out * sizeof(float)));
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  CHECK_CUBLAS(
      cublasLtMatmulDescCreate(&desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  CHECK_CUBLAS(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  CHECK_CUBLAS(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &d_b, sizeof(d_b)));
  cublasLtMatrixLayout_t a, b, c;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, in, out, in));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, in, T, in));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, out, T, out));
  cublasLtMatmulPreference_t pref;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  size_t workspace_size = 32 << 20;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_size, sizeof(workspace_size)));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, c, c, pref, 1, &heuristic, &found));
  if (found == 0) throw std::runtime_error("no cuBLASLt algorithm");
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(
      cublasLtMatmul(lt, desc, &one, d_w, a, d_x, b, &zero, d_y, c, d_y, c, &heuristic.algo, nullptr, 0, 0));
  CHECK_CUDA(cudaMemcpy(y, d_y, size_t(T) * out * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
  for (cublasLtMatrixLayout_t l : {a, b, c}) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(l));
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
  CHECK_CUBLAS(cublasLtDestroy(lt));
  for (float* p : {d_x, d_w, d_b, d_y}) CHECK_CUDA(cudaFree(p));
}

int lt_status_with_unsupported_epilogue() {
  cublasLtMatmulDesc_t desc;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DGELU;
  const cublasStatus_t s =
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
  return int(s);
}

int sgemm_status_with_bad_lda() {
  std::vector<float> a(16), b(16), c(16);
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  const float one = 1.0f, zero = 0.0f;
  // A is 4 x 4 and not transposed: lda must be at least 4.
  const cublasStatus_t s = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.data(), 3, b.data(),
                                       4, &zero, c.data(), 4);
  CHECK_CUBLAS(cublasDestroy(handle));
  return int(s);
}

}  // namespace cublas_linear
