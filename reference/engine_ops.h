// The oracle's ops as a correct engine of a declared kind computes them (numerics.h): what the
// noise-floor runs execute, so a floor is the error of such an engine. The oracle itself never
// calls these (its Numerics is one rounding, which routes every op to ops.h).
#pragma once

#include <span>
#include <string_view>

#include "numerics.h"
#include "ops.h"

namespace ds::ref {

// x as the engine hands it to a matmul with weights `w`: quantized to Q8_0 / Q8_K blocks per row
// and back, or rounded to the weight's f16 / bf16 (ggml's vec_dot_type). `file_type` is the
// weight's ggml type name in its GGUF ("Q4_K"), empty when it came from elsewhere.
Tensor engine_activations(const Tensor& x, Numerics::ActQuant q, std::string_view file_type, DType w_dtype);

// ref::linear as the engine computes it: its activations as `engine_activations` makes them,
// then summed in f32 (accum=f32) or exactly.
Tensor numerics_linear(const Tensor& x, const Matrix& w, const Tensor* bias, const Numerics& n,
                       std::string_view file_type);

// y = x W^T (+ b), every element summed in f32 one term after another (fused multiply-add), the
// bias added in f32.
Tensor linear_f32(const Tensor& x, const Matrix& w, const Tensor* bias);

// ref::rope with the angle of each (position, pair) computed as `angles` says (numerics.h).
Tensor engine_rope(const Tensor& x, int head_dim, int rotary_dim, int pos0, double theta, RopeMode mode,
                   std::span<const double> freq_factors, Numerics::RopeAngles angles);

// ref::attention as the engine computes it: scores and weighted sums in f32 (accum=f32); with an
// f16 KV cache, q and the probabilities rounded to f16 before their products (ggml's mul_mat
// converts its second operand to the cache's type); with f16-flash, llama.cpp's CPU flash
// attention: online softmax, the value accumulator held in f16 and rescaled on every new maximum.
Tensor engine_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int n_heads,
                        int n_kv_heads, int head_dim, int pos0, AttnScale scale, int window,
                        const Numerics& n);

// ref::rmsnorm / ref::layernorm as the engine computes them: with accum=f32, the sums, the
// reciprocal square root and each product rounded to f32 in turn.
Tensor numerics_rmsnorm(const Tensor& x, const Tensor& w, double eps, bool plus_one, int width,
                        const Numerics& n);
Tensor numerics_layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Numerics& n);

// gelu_new through llama.cpp's CPU table: 0 below -10, x above 10, else f16(gelu(f16(x))).
Tensor gelu_f16_table(const Tensor& x);

}  // namespace ds::ref
