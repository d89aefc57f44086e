// The mixture-of-experts FFN (docs/moe.md), in place of swiglu_mlp in a MoE model's layers:
// router logits, the routing rule's top-k choice and weights, each chosen expert's SwiGLU MLP on
// the tokens routed to it, the weighted combine, and (Qwen3-Next) the shared expert behind its
// sigmoid gate.
#include <fmt/format.h>

#include "block.h"
#include "engine_ops.h"
#include "ops.h"

namespace ds::ref {

namespace {

// Expert `e` of the layer's 3-D `role` ([experts, out, in]) as an [out, in] matrix, in its stored dtype.
Tensor expert_matrix(const BlockContext& c, std::string_view role, int e) {
  const Tensor& w = c.lw(fmt::format("{}.weight", role));
  return w.rows(e, e + 1).reshaped({w.dim(1), w.dim(2)});
}

Tensor expert_linear(const BlockContext& c, const Tensor& x, std::string_view role, int e) {
  const std::string name = layer_weight(c.layer, fmt::format("{}.weight", role));
  if (const QuantMatrix* q = c.weights.find_quantized(name))
    return numerics_linear(x, q->matrix(e), nullptr, c.numerics, c.model.file_type(name));
  return numerics_linear(x, expert_matrix(c, role, e), nullptr, c.numerics, c.model.file_type(name));
}

// Qwen3-Next (HF Qwen3NextSparseMoeBlock, llama.cpp's qwen3next build_layer_ffn): every token
// also runs through a dense SwiGLU expert, scaled by sigmoid(x . w) of a one-output linear, and
// the result is added to the routed combine.
void shared_expert(const BlockContext& c, TensorMap& s) {
  const Tensor& x = s.at("ffn_norm");
  const Tensor gate = c.stage(c.linear(x, "ffn_gate_shexp"));
  const Tensor up = c.stage(c.linear(x, "ffn_up_shexp"));
  c.put(s, "shexp_out", c.linear(c.stage(silu_mul(gate, up)), "ffn_down_shexp"));
  const Tensor logit = c.stage(c.linear(x, "ffn_gate_inp_shexp"));  // [T, 1]
  Tensor g(DType::f64, {logit.dim(0), 1});
  for (std::int64_t t = 0; t < logit.dim(0); ++t) g.data<double>()[t] = sigmoid(logit.at(t));
  c.put(s, "shexp_gate", g);
  const Tensor& moe = s.at("moe_out");
  const Tensor& sh = s.at("shexp_out");
  const Tensor& gs = s.at("shexp_gate");
  const std::int64_t T = moe.dim(0), D = moe.dim(1);
  Tensor out(DType::f64, {T, D});
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t d = 0; d < D; ++d)
      out.data<double>()[t * D + d] = moe.at(t * D + d) + gs.at(t) * sh.at(t * D + d);
  c.put(s, "ffn_out", out);
}

}  // namespace

void moe_mlp(const BlockContext& c, TensorMap& s) {
  const auto& cfg = c.cfg;
  c.put(s, "ffn_norm", c.rmsnorm(s["residual_1"], "ffn_norm", cfg.hidden));
  c.put(s, "router_logits", c.linear(s["ffn_norm"], "ffn_gate_inp"));
  const Tensor& logits = s["router_logits"];
  const std::int64_t T = logits.dim(0), E = cfg.n_experts, K = cfg.n_experts_used;
  std::vector<double> ids(std::size_t(T * K));
  std::vector<double> row(std::size_t(E), 0.0);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t e = 0; e < E; ++e) row[std::size_t(e)] = logits.at(t * E + e);
    const ExpertChoice ch = route_experts(row, int(K), cfg.moe_routing, cfg.moe_norm_topk);
    for (std::int64_t j = 0; j < K; ++j) ids[std::size_t(t * K + j)] = ch.ids[std::size_t(j)];
  }
  // Ids are exact integers: never rounded to the storage dtype.
  moe_combine(c, s, Tensor::from_f64({T, K}, ids));
}

void moe_combine(const BlockContext& c, TensorMap& s, const Tensor& ids) {
  const auto& cfg = c.cfg;
  const Tensor& logits = s.at("router_logits");
  const Tensor& x = s.at("ffn_norm");
  const std::int64_t T = x.dim(0), D = cfg.hidden, E = cfg.n_experts, K = cfg.n_experts_used;
  std::vector<double> weights(std::size_t(T * K));
  std::vector<double> row(std::size_t(E), 0.0);
  std::vector<int> chosen(std::size_t(K), 0);
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t e = 0; e < E; ++e) row[std::size_t(e)] = logits.at(t * E + e);
    for (std::int64_t j = 0; j < K; ++j) chosen[std::size_t(j)] = int(ids.at(t * K + j));
    const std::vector<double> w = routing_weights(row, chosen, cfg.moe_routing, cfg.moe_norm_topk);
    std::copy(w.begin(), w.end(), weights.begin() + t * K);
  }
  s["expert_ids"] = ids;
  c.put(s, "expert_weights", Tensor::from_f64({T, K}, weights));
  const Tensor& w = s["expert_weights"];

  // Each expert runs once on every token routed to it; the outputs are summed per token in slot
  // order (highest weight first), a fixed order whatever the expert numbering.
  std::vector<double> slot_out(std::size_t(T * K * D), 0.0);
  for (int e = 0; e < E; ++e) {
    std::vector<std::int64_t> slots;  // t * K + j routed to e
    for (std::int64_t i = 0; i < T * K; ++i)
      if (int(ids.at(i)) == e) slots.push_back(i);
    if (slots.empty()) continue;
    Tensor xe(DType::f64, {std::int64_t(slots.size()), D});
    for (std::size_t r = 0; r < slots.size(); ++r)
      for (std::int64_t d = 0; d < D; ++d)
        xe.data<double>()[std::int64_t(r) * D + d] = x.at(slots[r] / K * D + d);
    const Tensor gate = c.stage(expert_linear(c, xe, "ffn_gate_exps", e));
    const Tensor up = c.stage(expert_linear(c, xe, "ffn_up_exps", e));
    const Tensor down = c.stage(expert_linear(c, c.stage(silu_mul(gate, up)), "ffn_down_exps", e));
    for (std::size_t r = 0; r < slots.size(); ++r)
      for (std::int64_t d = 0; d < D; ++d)
        slot_out[std::size_t(slots[r] * D + d)] = w.at(slots[r]) * down.at(std::int64_t(r) * D + d);
  }
  Tensor out(DType::f64, {T, D});
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t j = 0; j < K; ++j)
      for (std::int64_t d = 0; d < D; ++d)
        out.data<double>()[t * D + d] += slot_out[std::size_t((t * K + j) * D + d)];
  c.put(s, "moe_out", out);
  if (cfg.shared_expert()) {
    shared_expert(c, s);
    c.put(s, "residual_2", add(s.at("residual_1"), s["ffn_out"]));
  } else {
    c.put(s, "residual_2", add(s.at("residual_1"), s["moe_out"]));
  }
}

}  // namespace ds::ref
