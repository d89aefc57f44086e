// Host entry points of cublas_linear.cu: projections computed by cuBLAS around a kernel of the
// file's own (a bias add), as repositories' forward passes do. Host arrays in and out, row-major:
// x [T, in], w [out, in] (a Linear layer's weight), y [T, out].
#pragma once

namespace cublas_linear {

// y = x w^T + bias through cublasSgemm (column-major: y^T = w x^T) and a bias kernel; `tf32`
// sets CUBLAS_TF32_TENSOR_OP_MATH on the handle first.
void linear_sgemm(float* y, const float* x, const float* w, const float* bias, int T, int in, int out,
                  bool tf32);

// y = x w^T with x and w stored as f16 (rounded on the host) through cublasGemmEx, f32 out and
// CUBLAS_COMPUTE_32F.
void linear_gemm_ex_f16(float* y, const float* x, const float* w, int T, int in, int out);

// Two independent products y_b = x_b w_b^T through cublasGemmStridedBatchedEx (f32).
void linear_batched(float* y, const float* x, const float* w, int T, int in, int out);

// y = gelu(x w^T + bias) (the tanh form) through cublasLtMatmul with CUBLASLT_EPILOGUE_GELU_BIAS,
// the descriptor, layouts and heuristic set up as a forward pass does (`tf32`: FAST_TF32 compute).
void linear_lt_gelu_bias(float* y, const float* x, const float* w, const float* bias, int T, int in, int out,
                         bool tf32);

// The status cublasLtMatmulDescSetAttribute returns for an epilogue the CPU does not take (DGELU).
int lt_status_with_unsupported_epilogue();

// The status cublasSgemm returns for an lda smaller than the rows of A (nothing is computed).
int sgemm_status_with_bad_lda();

}  // namespace cublas_linear
