// The oracle's ops, in double. Activations are f64 Tensors of shape [T, width]; weights are
// f64 [out, in] (the nn.Linear layout). Each op is the formula in docs/reference-math.md,
// written plainly: this code is the definition candidates are judged against.
#pragma once

#include <span>

#include "model_config.h"
#include "tensor.h"

namespace ds::ref {

// y = x * rsqrt(mean(x^2) + eps) * w  (or * (1 + w)), per row of `width` (rows may be heads).
Tensor rmsnorm(const Tensor& x, const Tensor& w, double eps, bool plus_one, int width);
// y = (x - mean) / sqrt(var + eps) * w + b, population variance.
Tensor layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps);
// y = x W^T (+ b).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias);
// Rotary embedding of heads of size `head_dim` packed in each row, tokens at pos0, pos0+1, ...
Tensor rope(const Tensor& x, int head_dim, int rotary_dim, int pos0, double theta, RopeMode mode);
// Causal attention: q [T, H*d] at positions pos0.., k/v caches [P, Hkv*d] holding positions
// 0..P-1 (P = pos0 + T). Query head h reads KV head h / (H / Hkv).
Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int n_heads,
                 int n_kv_heads, int head_dim, int pos0, double scale);
Tensor silu_mul(const Tensor& gate, const Tensor& up);  // silu(gate) * up
Tensor add(const Tensor& a, const Tensor& b);
Tensor embed(std::span<const std::int32_t> tokens, const Tensor& table);
// Every element rounded through `storage` (identity for f64): the precision-mode reference.
Tensor round_stage(const Tensor& x, DType storage);

double silu(double x);
double sigmoid(double x);

}  // namespace ds::ref
