// HF checkpoint names <-> canonical (GGUF-style) names, reference-math.md §5.3 / §5.5.
#include <fmt/format.h>

#include "hf.h"

namespace ds::ref {

namespace {

struct Rule {
  std::string_view hf, canonical;
  HfTransform transform = HfTransform::none;
};

// Per-layer names after "model.layers.N." (LLaMA / Qwen / Qwen3-Next).
constexpr Rule kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.gate_proj.bias", "ffn_gate.bias"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.up_proj.bias", "ffn_up.bias"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.down_proj.bias", "ffn_down.bias"},
    // MoE routers: Qwen3-MoE's mlp.gate, Mixtral's block_sparse_moe.gate.
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
    // Qwen3-Next's shared expert and its gate (a Linear(hidden, 1)).
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight", HfTransform::squeeze_conv},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.A_log", "ssm_a", HfTransform::neg_exp},
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
    // Qwen3-Next's fused projections; load_hf splits them into attn_qkv / attn_gate and
    // ssm_beta / ssm_alpha.
    {"linear_attn.in_proj_qkvz.weight", "fused_qkvz.weight"},
    {"linear_attn.in_proj_ba.weight", "fused_ba.weight"},
};
constexpr Rule kModel[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// GPT-2 (Conv1D weights are [in, out]: transposed to the nn.Linear layout).
constexpr Rule kGpt2Layer[] = {
    {"ln_1.weight", "attn_norm.weight"},
    {"ln_1.bias", "attn_norm.bias"},
    {"attn.c_attn.weight", "attn_qkv.weight", HfTransform::transpose},
    {"attn.c_attn.bias", "attn_qkv.bias"},
    {"attn.c_proj.weight", "attn_output.weight", HfTransform::transpose},
    {"attn.c_proj.bias", "attn_output.bias"},
    {"ln_2.weight", "ffn_norm.weight"},
    {"ln_2.bias", "ffn_norm.bias"},
    {"mlp.c_fc.weight", "ffn_up.weight", HfTransform::transpose},
    {"mlp.c_fc.bias", "ffn_up.bias"},
    {"mlp.c_proj.weight", "ffn_down.weight", HfTransform::transpose},
    {"mlp.c_proj.bias", "ffn_down.bias"},
};
constexpr Rule kGpt2Model[] = {
    {"wte.weight", "token_embd.weight"},
    {"wpe.weight", "position_embd.weight"},
    {"ln_f.weight", "output_norm.weight"},
    {"ln_f.bias", "output_norm.bias"},
};

// One expert's tensors after "<prefix>.experts.M.", and the stack each belongs to.
struct ExpertRule {
  std::string_view prefix, hf, canonical;
};
constexpr ExpertRule kExperts[] = {
    {"mlp", "gate_proj.weight", "ffn_gate_exps.weight"},
    {"mlp", "up_proj.weight", "ffn_up_exps.weight"},
    {"mlp", "down_proj.weight", "ffn_down_exps.weight"},
    // Mixtral: w1 gate, w3 up, w2 down.
    {"block_sparse_moe", "w1.weight", "ffn_gate_exps.weight"},
    {"block_sparse_moe", "w3.weight", "ffn_up_exps.weight"},
    {"block_sparse_moe", "w2.weight", "ffn_down_exps.weight"},
};
// Mixtral's (llama with experts) names, or Qwen3-MoE's.
std::string_view moe_prefix(Family f) { return f == Family::llama ? "block_sparse_moe" : "mlp"; }

std::string_view strip(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix ? s.substr(prefix.size()) : s;
}

// "N.rest" -> (N, rest); layer -1 when `s` does not start with a number and a dot.
std::pair<int, std::string_view> split_layer(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i >= s.size() || s[i] != '.') return {-1, s};
  return {std::stoi(std::string(s.substr(0, i))), s.substr(i + 1)};
}

}  // namespace

std::optional<HfName> hf_to_canonical(const std::string& hf_name, Family family) {
  std::string_view n = hf_name;
  if (family == Family::gpt2) {
    n = strip(n, "transformer.");
    for (const auto& r : kGpt2Model)
      if (n == r.hf) return HfName{std::string(r.canonical), r.transform, -1};
    if (n.substr(0, 2) != "h.") return std::nullopt;
    const auto [layer, rest] = split_layer(n.substr(2));
    if (layer < 0) return std::nullopt;
    for (const auto& r : kGpt2Layer)
      if (rest == r.hf) return HfName{layer_weight(layer, r.canonical), r.transform, layer};
    return std::nullopt;  // attn.bias / attn.masked_bias are mask buffers
  }
  n = strip(n, "model.language_model.");  // Qwen3.5 multimodal checkpoints
  if (n.data() != hf_name.data()) return hf_to_canonical("model." + std::string(n), family);
  for (const auto& r : kModel)
    if (n == r.hf) return HfName{std::string(r.canonical), r.transform, -1};
  n = strip(n, "model.");
  if (n.substr(0, 7) != "layers.") return std::nullopt;
  const auto [layer, rest] = split_layer(n.substr(7));
  if (layer < 0) return std::nullopt;
  for (const auto& r : kLayer)
    if (rest == r.hf) return HfName{layer_weight(layer, r.canonical), r.transform, layer};
  for (const auto& r : kExperts) {
    const std::string head = fmt::format("{}.experts.", r.prefix);
    if (rest.substr(0, head.size()) != head) continue;
    const auto [expert, tail] = split_layer(rest.substr(head.size()));
    if (expert >= 0 && tail == r.hf)
      return HfName{layer_weight(layer, r.canonical), HfTransform::none, layer, expert};
  }
  return std::nullopt;
}

std::optional<std::string> hf_expert_name(const std::string& canonical, Family family, int expert) {
  if (canonical.rfind("blk.", 0) != 0) return std::nullopt;
  const auto [layer, rest] = split_layer(std::string_view(canonical).substr(4));
  for (const auto& r : kExperts)
    if (r.prefix == moe_prefix(family) && rest == r.canonical)
      return fmt::format("model.layers.{}.{}.experts.{}.{}", layer, r.prefix, expert, r.hf);
  return std::nullopt;
}

HfName canonical_to_hf(const std::string& canonical, Family family) {
  const bool gpt2 = family == Family::gpt2;
  for (const auto& r : gpt2 ? std::span<const Rule>(kGpt2Model) : std::span<const Rule>(kModel))
    if (canonical == r.canonical) return {std::string(r.hf), r.transform, -1};
  if (canonical.rfind("blk.", 0) == 0) {
    const auto [layer, rest] = split_layer(std::string_view(canonical).substr(4));
    if (rest == "ffn_gate_inp.weight")
      return {fmt::format("model.layers.{}.{}.gate.weight", layer, moe_prefix(family)), HfTransform::none,
              layer};
    for (const auto& r : gpt2 ? std::span<const Rule>(kGpt2Layer) : std::span<const Rule>(kLayer))
      if (rest == r.canonical)
        return {gpt2 ? fmt::format("h.{}.{}", layer, r.hf) : fmt::format("model.layers.{}.{}", layer, r.hf),
                r.transform, layer};
  }
  throw ModelError(fmt::format("no Hugging Face name for tensor {}", canonical));
}

}  // namespace ds::ref
