// The oracle's ops, in double. Activations are f64 Tensors of shape [T, width]; weights are
// [out, in] (the nn.Linear layout) in f64, or stored as loaded (f32, f16, bf16, block-quantized:
// `Matrix`) and widened a row at a time; the products are formed in double either way. Each op
// is the formula in docs/reference-math.md, written plainly: this code is the definition
// candidates are judged against.
#pragma once

#include <span>
#include <vector>

#include "model_config.h"
#include "tensor.h"
#include "weights.h"

namespace ds::ref {

// The weight operand of `linear` and `embed`, [out, in]: a tensor in its stored dtype (f64, f32,
// f16, bf16) or a block-quantized matrix, read a row at a time either way.
struct Matrix {
  const Tensor* t = nullptr;
  const QuantMatrix* q = nullptr;
  Matrix(const Tensor& tensor) : t(&tensor) {}     // NOLINT: every Tensor is one
  Matrix(const QuantMatrix& quant) : q(&quant) {}  // NOLINT
  int rank() const { return t ? t->rank() : int(q->shape.size()); }
  std::int64_t out() const { return t ? t->dim(0) : q->rows(); }
  std::int64_t in() const { return t ? t->dim(1) : q->cols(); }
  const Shape& shape() const { return t ? t->shape() : q->shape; }
  // Row o as floats: exact for f32, f16, bf16 and quantized rows (f64 rows are rounded).
  void row(std::int64_t o, std::vector<float>& out) const;
};

// y = x * rsqrt(mean(x^2) + eps) * w  (or * (1 + w)), per row of `width` (rows may be heads).
Tensor rmsnorm(const Tensor& x, const Tensor& w, double eps, bool plus_one, int width);
// y = (x - mean) / sqrt(var + eps) * w + b, population variance.
Tensor layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps);
// y = x W^T (+ b). Output columns are split over threads; each element is one dot product in
// a fixed order (four interleaved partial sums, see linear_kernel.cpp), whatever the thread count.
Tensor linear(const Tensor& x, const Matrix& w, const Tensor* bias);
// Rotary embedding of heads of size `head_dim` packed in each row, tokens at pos0, pos0+1, ...
// Dims >= rotary_dim pass through (partial RoPE). `freq_factors` (empty or rotary_dim / 2
// values) divide the inverse frequencies (llama3 scaling).
Tensor rope(const Tensor& x, int head_dim, int rotary_dim, int pos0, double theta, RopeMode mode,
            std::span<const double> freq_factors = {});
// Llama-3 rope scaling as per-pair divisors of inv_freq (HF _compute_llama3_parameters).
std::vector<double> llama3_freq_factors(int rotary_dim, double theta, double factor, double low_freq_factor,
                                        double high_freq_factor, double original_context);

struct AttnScale {
  double value = 1.0;
  bool divide = false;  // scores / value (GPT-2) instead of scores * value
};
// Causal attention: q [T, H*d] at positions pos0.., k/v caches [P, Hkv*d] holding positions
// 0..P-1 (P = pos0 + T). Query head h reads KV head h / (H / Hkv). With window > 0 the query
// at position i sees keys i - window + 1 .. i only (Mistral).
Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int n_heads, int n_kv_heads,
                 int head_dim, int pos0, AttnScale scale, int window = 0);
Tensor silu_mul(const Tensor& gate, const Tensor& up);  // silu(gate) * up
Tensor gelu_new(const Tensor& x);                       // tanh approximation (GPT-2)
Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor sigmoid_mul(const Tensor& x, const Tensor& gate);  // x * sigmoid(gate)
Tensor embed(std::span<const std::int32_t> tokens, const Matrix& table);
// Columns [begin, begin + width) of every row of `width_total`-wide rows, for each of `groups`
// consecutive groups: the per-head split of packed projections.
Tensor take_columns(const Tensor& x, int group_width, int begin, int width);
// Every element rounded through `storage` (identity for f64): the precision-mode reference.
Tensor round_stage(const Tensor& x, DType storage);

// ---- Gated DeltaNet (reference-math.md §3, §4) ----
// x / sqrt(sum(x^2) + eps) per row of `width`, then * scale.
Tensor l2norm(const Tensor& x, int width, double eps, double scale);
// Causal depthwise conv over time + SiLU. x [T, C] raw inputs, w [C, K] (tap K-1 is the current
// token), `state` [S, C] the last S >= K-1 raw inputs before this step, oldest first (zeros for
// a new sequence). Returns the outputs; `state` becomes the last S raw inputs after the step.
Tensor conv_silu(const Tensor& x, const Tensor& w, Tensor& state);
// beta = sigmoid(b); g = a_neg * softplus(a + dt_bias) with a_neg = -exp(A_log), per value head.
Tensor gdn_beta(const Tensor& b);
Tensor gdn_g(const Tensor& a, const Tensor& a_neg, const Tensor& dt_bias);
// The delta-rule recurrence, token by token. q, k [T, nk*dk] (normalised and, for q, scaled);
// v [T, nv*dv]; g, beta [T, nv]. `state` holds nv matrices S[dk][dv] (key-major, the HF
// orientation) and is updated in place. Value head h reads key head cfg.gdn_key_head(h).
Tensor gdn_recurrence(const ModelConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& g, const Tensor& beta, std::vector<double>& state, bool f32 = false);
// Per (token, value head): w * (o * rsqrt(mean(o^2) + eps)) * silu(z).
Tensor gated_rmsnorm(const Tensor& o, const Tensor& z, const Tensor& w, double eps, int width);

// ---- Mixture of experts (docs/moe.md) ----
// One token's routing: the chosen experts, highest weight first (equal values: lower expert
// index first), and the weights their outputs are combined with.
struct ExpertChoice {
  std::vector<int> ids;
  std::vector<double> weights;
};
// The router's decision for one row of logits under `rule` (k = ids.size() = n_used);
// `norm_topk` renormalises softmax_topk's chosen probabilities to sum 1 (topk_softmax's already do).
ExpertChoice route_experts(std::span<const double> logits, int n_used, MoeRouting rule, bool norm_topk);
// The weights `rule` gives the experts `ids` (any k distinct experts, not only the top k): what
// route_experts returns for its own choice.
std::vector<double> routing_weights(std::span<const double> logits, std::span<const int> ids, MoeRouting rule,
                                    bool norm_topk);
// The indices of the k largest values, largest first, equal values lower index first.
std::vector<int> top_k(std::span<const double> values, int k);

double silu(double x);
double sigmoid(double x);
double softplus(double x);

}  // namespace ds::ref
