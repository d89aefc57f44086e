#include "shapes.h"

#include <fmt/format.h>

#include "model_error.h"

namespace ds::ref {

namespace {
struct LayerShape {
  std::string_view role;
  Shape (*shape)(const ModelConfig&, BlockKind);
};

std::int64_t q_rows(const ModelConfig& c, BlockKind k) {
  return k == BlockKind::gated_attn ? 2 * c.q_dim() : c.q_dim();
}

const LayerShape kLayer[] = {
    {"attn_norm.weight", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"attn_norm.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"ffn_norm.weight", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"ffn_norm.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"attn_q.weight",
     [](const ModelConfig& c, BlockKind k) {
       return Shape{q_rows(c, k), c.hidden};
     }},
    {"attn_q.bias", [](const ModelConfig& c, BlockKind k) { return Shape{q_rows(c, k)}; }},
    {"attn_k.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.kv_dim(), c.hidden};
     }},
    {"attn_k.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.kv_dim()}; }},
    {"attn_v.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.kv_dim(), c.hidden};
     }},
    {"attn_v.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.kv_dim()}; }},
    {"attn_q_norm.weight", [](const ModelConfig& c, BlockKind) { return Shape{c.head_dim}; }},
    {"attn_k_norm.weight", [](const ModelConfig& c, BlockKind) { return Shape{c.head_dim}; }},
    {"attn_output.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.hidden, c.q_dim()};
     }},
    {"attn_output.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"attn_qkv.weight",
     [](const ModelConfig& c, BlockKind k) {
       return Shape{k == BlockKind::gdn ? c.gdn_conv_dim() : 3 * c.hidden, c.hidden};
     }},
    {"attn_qkv.bias", [](const ModelConfig& c, BlockKind) { return Shape{3 * c.hidden}; }},
    {"attn_gate.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.gdn_value_dim(), c.hidden};
     }},
    {"ssm_beta.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.gdn_v_heads, c.hidden};
     }},
    {"ssm_alpha.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.gdn_v_heads, c.hidden};
     }},
    {"ssm_conv1d.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.gdn_conv_dim(), c.conv_kernel};
     }},
    {"ssm_dt.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.gdn_v_heads}; }},
    {"ssm_a", [](const ModelConfig& c, BlockKind) { return Shape{c.gdn_v_heads}; }},
    {"ssm_norm.weight", [](const ModelConfig& c, BlockKind) { return Shape{c.gdn_v_dim}; }},
    {"ssm_out.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.hidden, c.gdn_value_dim()};
     }},
    {"ffn_gate.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.ffn, c.hidden};
     }},
    {"ffn_gate.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.ffn}; }},
    {"ffn_up.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.ffn, c.hidden};
     }},
    {"ffn_up.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.ffn}; }},
    {"ffn_down.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.hidden, c.ffn};
     }},
    {"ffn_down.bias", [](const ModelConfig& c, BlockKind) { return Shape{c.hidden}; }},
    {"ffn_gate_inp.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.n_experts, c.hidden};
     }},
    {"ffn_gate_exps.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.n_experts, c.expert_ffn, c.hidden};
     }},
    {"ffn_up_exps.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.n_experts, c.expert_ffn, c.hidden};
     }},
    {"ffn_down_exps.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.n_experts, c.hidden, c.expert_ffn};
     }},
    // Qwen3-Next's shared expert and its gate (a linear of one output; GGUF stores it 1-D).
    {"ffn_gate_inp_shexp.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{1, c.hidden};
     }},
    {"ffn_gate_shexp.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.shared_expert_ffn, c.hidden};
     }},
    {"ffn_up_shexp.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.shared_expert_ffn, c.hidden};
     }},
    {"ffn_down_shexp.weight",
     [](const ModelConfig& c, BlockKind) {
       return Shape{c.hidden, c.shared_expert_ffn};
     }},
};
}  // namespace

std::optional<Shape> expected_shape(const ModelConfig& c, std::string_view name) {
  if (name == "token_embd.weight" || name == "output.weight") return Shape{c.vocab, c.hidden};
  if (name == "position_embd.weight") return Shape{c.max_positions, c.hidden};
  if (name == "output_norm.weight" || name == "output_norm.bias") return Shape{c.hidden};
  if (name.substr(0, 4) != "blk.") return std::nullopt;
  const auto dot = name.find('.', 4);
  if (dot == std::string_view::npos) return std::nullopt;
  const int layer = std::atoi(std::string(name.substr(4, dot - 4)).c_str());
  if (layer < 0 || layer >= c.n_layers) return std::nullopt;
  const std::string_view role = name.substr(dot + 1);
  for (const auto& r : kLayer)
    if (r.role == role) return r.shape(c, c.block_kind(layer));
  return std::nullopt;
}

void check_shapes(const Model& model) {
  for (const std::string& name : model.weights.names()) {
    const auto want = expected_shape(model.config, name);
    if (!want) continue;
    const Shape shape = *model.weights.shape_of(name);
    // GGUF position tables may be shorter than the context: only the width must agree.
    if (name == "position_embd.weight" && shape.size() == 2 && shape[1] == (*want)[1]) continue;
    if (shape != *want)
      throw ModelError(fmt::format("{}: tensor {} has shape {}, the config implies {}", model.config.name,
                                   name, shape_str(shape), shape_str(*want)));
  }
}

}  // namespace ds::ref
