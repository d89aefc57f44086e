#include "reference.h"

#include <fmt/format.h>

#include <stdexcept>

#include "contracts.h"
#include "engine_ops.h"
#include "ops.h"
#include "shapes.h"

namespace ds::ref {

namespace {
// What stays in the model's stored dtype: the operands of `linear` and `embed`, which widen a
// row at a time (exactly: every stored float is a double). Everything else (norm weights,
// biases, the conv kernel) is read as f64 by its op and gets a copy; it is small.
bool kept_stored(std::string_view name, const Shape& shape, DType dtype) {
  const bool floating =
      dtype == DType::f64 || dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
  // MoE experts are matrices stacked [experts, out, in]: sliced an expert at a time, never widened.
  const bool expert_stack = shape.size() == 3 && name.ends_with("_exps.weight");
  return floating && (shape.size() == 2 || expert_stack) && !name.ends_with("ssm_conv1d.weight");
}
}  // namespace

Reference::Reference(const Model& model, ReferenceOptions options)
    : Reference(std::make_shared<const Model>(model), options) {}

Reference::Reference(std::shared_ptr<const Model> model, ReferenceOptions options)
    : cfg_(model->config), opt_(options), model_(std::move(model)), state_(std::size_t(cfg_.n_layers)) {
  cfg_.validate();
  require_complete(*model_);
  check_shapes(*model_);
  for (const auto& [name, t] : model_->weights.all())
    if (opt_.widen_all || !kept_stored(name, t.shape(), t.dtype())) wide_.put(name, t.to(DType::f64));
  // Quantized matrices are read a row at a time, as stored ones are; one an f64-only op reads is
  // decoded into this reference's copy like any other.
  for (const auto& [name, q] : model_->weights.quantized())
    if (opt_.widen_all || !kept_stored(name, q.shape, DType::f32))
      wide_.put(name, q.dequantized().to(DType::f64));
}

std::uint64_t Reference::own_bytes(std::string_view name, const Shape& shape, DType stored) {
  return kept_stored(name, shape, stored) ? 0 : std::uint64_t(ds::numel(shape)) * 8;
}

const Tensor* Reference::w_opt(std::string_view name) const { return weights().find(name); }
const Tensor& Reference::w(std::string_view name) const { return weights().get(name); }

Tensor Reference::stage(const Tensor& t) const { return round_stage(t, opt_.storage); }

void Reference::reset() {
  for (auto& s : state_) s = {};
}

int Reference::positions() const { return state_.empty() ? 0 : state_.front().positions; }

TensorMap Reference::embed(std::span<const std::int32_t> tokens, int pos0) const {
  Tensor e = ref::embed(tokens, weights().matrix("token_embd.weight"));
  if (weights().has("position_embd.weight")) {
    const Matrix table = weights().matrix("position_embd.weight");
    if (pos0 + e.dim(0) > table.out())
      throw std::out_of_range(fmt::format("{}: position {} beyond the {} learned positions", cfg_.name,
                                          pos0 + e.dim(0) - 1, table.out()));
    std::vector<std::int32_t> positions(std::size_t(e.dim(0)));
    for (std::size_t t = 0; t < positions.size(); ++t) positions[t] = pos0 + std::int32_t(t);
    const Tensor p = ref::embed(positions, table);  // the learned rows, read as the tokens' are
    for (std::int64_t i = 0; i < e.numel(); ++i) e.data<double>()[i] += p.data<double>()[i];
  }
  TensorMap out;
  out["embed"] = stage(e);
  return out;
}

TensorMap Reference::head(const Tensor& x, const TensorMap* forced) const {
  TensorMap out;
  Tensor n = cfg_.family == Family::gpt2
                 ? numerics_layernorm(x, w("output_norm.weight"), w("output_norm.bias"), cfg_.norm_eps,
                                      opt_.numerics)
                 : numerics_rmsnorm(x, w("output_norm.weight"), cfg_.norm_eps, cfg_.norm_plus_one,
                                    cfg_.hidden, opt_.numerics);
  out["final_norm"] = stage(n);
  const std::string_view head_weight = weights().has("output.weight") ? "output.weight" : "token_embd.weight";
  const auto f = forced ? forced->find("final_norm") : TensorMap::const_iterator{};
  const Tensor& normed = forced && f != forced->end() ? f->second : out["final_norm"];
  out["logits"] = stage(numerics_linear(normed, weights().matrix(head_weight), nullptr, opt_.numerics,
                                        model_->file_type(head_weight)));
  return out;
}

TensorMap Reference::layer(int layer, const Tensor& x, int pos0, const TensorMap* forced) {
  TensorMap own;
  const BlockContext c{cfg_, weights(), layer, opt_.storage, opt_.numerics, *model_, forced, &own};
  LayerState& st = state_.at(std::size_t(layer));
  const auto with_own = [&own](TensorMap s) {
    for (auto& [name, t] : own) s[name] = std::move(t);
    return s;
  };
  switch (cfg_.block_kind(layer)) {
    case BlockKind::decoder: return with_own(decoder_block(c, x, pos0, st));
    case BlockKind::gpt2: return with_own(gpt2_block(c, x, pos0, st));
    case BlockKind::gdn: return with_own(gdn_block(c, x, pos0, st));
    case BlockKind::gated_attn: return with_own(gated_attn_block(c, x, pos0, st));
    default: break;
  }
  throw std::invalid_argument(fmt::format("reference: layer {} has block kind {}, which is not a layer",
                                          layer, block_kind_name(cfg_.block_kind(layer))));
}

void Reference::adopt_state(int layer, const TensorMap& given) {
  LayerState& st = state_.at(std::size_t(layer));
  if (auto it = given.find("conv_state");
      it != given.end() && !st.conv.empty() && it->second.numel() == st.conv.numel())
    st.conv = it->second.to(DType::f64).reshaped(st.conv.shape());
  const std::int64_t S = std::int64_t(cfg_.gdn_v_heads) * cfg_.gdn_k_dim * cfg_.gdn_v_dim;
  if (auto it = given.find("gdn_state"); it != given.end() && S > 0 && it->second.numel() == S)
    st.ssm = gdn_state_from_stage(cfg_, it->second);
}

TensorMap Reference::moe_given_ids(int layer, TensorMap stages, const Tensor& ids) const {
  if (!cfg_.moe() || cfg_.block_kind(layer) == BlockKind::gpt2)
    throw std::invalid_argument(fmt::format("reference: layer {} has no experts", layer));
  const BlockContext c{cfg_, weights(), layer, opt_.storage, opt_.numerics, *model_};
  moe_combine(c, stages, ids);
  return stages;
}

Tensor Reference::forward(std::span<const std::int32_t> tokens) {
  const int pos0 = positions();
  Tensor x = embed(tokens, pos0)["embed"];
  for (int l = 0; l < cfg_.n_layers; ++l) x = layer(l, x, pos0)["residual_2"];
  return head(x)["logits"];
}

std::int32_t Reference::greedy_next(const Tensor& logits) {
  const std::int64_t V = logits.dim(logits.rank() - 1), base = logits.numel() - V;
  std::int32_t best = 0;
  for (std::int64_t i = 1; i < V; ++i)
    if (logits.at(base + i) > logits.at(base + best)) best = std::int32_t(i);
  return best;
}

std::vector<std::int32_t> Reference::generate(std::span<const std::int32_t> prompt, int steps) {
  std::vector<std::int32_t> out;
  Tensor logits = forward(prompt);
  for (int s = 0; s < steps; ++s) {
    const std::int32_t next = greedy_next(logits);
    out.push_back(next);
    if (s + 1 < steps) logits = forward(std::span<const std::int32_t>(&next, 1));
  }
  return out;
}

}  // namespace ds::ref
