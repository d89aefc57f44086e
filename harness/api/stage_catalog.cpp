#include "stage_catalog.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace ds {

namespace {

constexpr StageInfo kDecoder[] = {
    {"attn_norm", "RMSNorm of the layer input"},
    {"q", "query projection (+ bias)"},
    {"k", "key projection (+ bias)"},
    {"v", "value projection (+ bias)"},
    {"q_norm", "per-head RMSNorm of q (QK-norm)"},
    {"k_norm", "per-head RMSNorm of k (QK-norm)"},
    {"q_rope", "q after rotary position embedding"},
    {"k_rope", "k after rotary position embedding (what the KV cache stores)"},
    {"attn", "causal GQA attention output, heads concatenated"},
    {"attn_out", "attention output projection"},
    {"residual_1", "layer input + attention output"},
    {"ffn_norm", "RMSNorm before the MLP"},
    {"gate", "MLP gate projection (+ bias)"},
    {"up", "MLP up projection (+ bias)"},
    {"ffn_act", "silu(gate) * up"},
    {"down", "MLP down projection"},
    // Mixture-of-experts layers (cfg.moe()) have these in place of gate .. down (docs/moe.md).
    {"router_logits", "MoE router logits: ffn_norm x ffn_gate_inp^T [T, experts]"},
    {"expert_ids", "MoE chosen experts per token [T, k], highest weight first, ties to the lower index"},
    {"expert_weights", "MoE routing weights of the chosen experts [T, k], in expert_ids' order"},
    {"moe_out", "sum over the chosen experts of weight * down_e(silu(gate_e x) * up_e x)"},
    // ...and with a shared expert (Qwen3-Next), these after moe_out.
    {"shexp_out", "shared expert: down_s(silu(gate_s x) * up_s x) of ffn_norm"},
    {"shexp_gate", "shared-expert gate sigmoid(ffn_norm . ffn_gate_inp_shexp) [T, 1]"},
    {"ffn_out", "moe_out + shexp_gate * shexp_out (the FFN output)"},
    {"residual_2", "residual_1 + MLP output (the layer output)"},
};

constexpr StageInfo kGpt2[] = {
    {"ln_1", "LayerNorm before attention"},
    {"qkv", "fused c_attn projection [q|k|v] with bias"},
    {"attn", "causal MHA output, heads concatenated"},
    {"attn_out", "c_proj with bias"},
    {"residual_1", "layer input + attention output"},
    {"ln_2", "LayerNorm before the MLP"},
    {"fc", "c_fc with bias"},
    {"gelu", "gelu_new (tanh approximation)"},
    {"proj", "mlp c_proj with bias"},
    {"residual_2", "residual_1 + MLP output (the layer output)"},
};

constexpr StageInfo kGdn[] = {
    {"attn_norm", "RMSNorm (1 + w) of the layer input"},
    {"qkv_mixed", "in_proj_qkv output [q|k|v] before the conv"},
    {"z_gate", "in_proj_z output (output gate)"},
    {"beta", "sigmoid(b) per value head"},
    {"g", "-exp(A_log) * softplus(a + dt_bias) per value head"},
    {"conv", "causal depthwise conv + SiLU over qkv_mixed"},
    {"conv_state", "conv state after this step: raw pre-conv inputs [K-1 or K, conv_dim], oldest row first"},
    {"q_l2", "l2-normalised, scaled q"},
    {"k_l2", "l2-normalised k"},
    {"gdn_out", "delta-rule recurrence output"},
    {"gdn_state", "recurrent state after this step: [v_heads*d_k, d_v] key-major or [v_heads*d_v, d_k]"},
    {"gated_norm", "RMSNorm(gdn_out) * silu(z)"},
    {"out_proj", "output projection"},
    {"residual_1", "layer input + linear-attention output"},
    {"ffn_norm", "RMSNorm (1 + w) before the MLP"},
    {"gate", "MLP gate projection"},
    {"up", "MLP up projection"},
    {"ffn_act", "silu(gate) * up"},
    {"down", "MLP down projection"},
    // Mixture-of-experts layers (cfg.moe()) have these in place of gate .. down (docs/moe.md).
    {"router_logits", "MoE router logits: ffn_norm x ffn_gate_inp^T [T, experts]"},
    {"expert_ids", "MoE chosen experts per token [T, k], highest weight first, ties to the lower index"},
    {"expert_weights", "MoE routing weights of the chosen experts [T, k], in expert_ids' order"},
    {"moe_out", "sum over the chosen experts of weight * down_e(silu(gate_e x) * up_e x)"},
    // ...and with a shared expert (Qwen3-Next), these after moe_out.
    {"shexp_out", "shared expert: down_s(silu(gate_s x) * up_s x) of ffn_norm"},
    {"shexp_gate", "shared-expert gate sigmoid(ffn_norm . ffn_gate_inp_shexp) [T, 1]"},
    {"ffn_out", "moe_out + shexp_gate * shexp_out (the FFN output)"},
    {"residual_2", "residual_1 + MLP output (the layer output)"},
};

constexpr StageInfo kGatedAttn[] = {
    {"attn_norm", "RMSNorm (1 + w) of the layer input"},
    {"q", "query half of q_proj"},
    {"attn_gate", "gate half of q_proj"},
    {"k", "key projection"},
    {"v", "value projection"},
    {"q_norm", "per-head RMSNorm (1 + w) of q"},
    {"k_norm", "per-head RMSNorm (1 + w) of k"},
    {"q_rope", "q after partial RoPE"},
    {"k_rope", "k after partial RoPE"},
    {"attn", "causal GQA attention output"},
    {"attn_gated", "attention output * sigmoid(gate)"},
    {"attn_out", "output projection"},
    {"residual_1", "layer input + attention output"},
    {"ffn_norm", "RMSNorm (1 + w) before the MLP"},
    {"gate", "MLP gate projection"},
    {"up", "MLP up projection"},
    {"ffn_act", "silu(gate) * up"},
    {"down", "MLP down projection"},
    // Mixture-of-experts layers (cfg.moe()) have these in place of gate .. down (docs/moe.md).
    {"router_logits", "MoE router logits: ffn_norm x ffn_gate_inp^T [T, experts]"},
    {"expert_ids", "MoE chosen experts per token [T, k], highest weight first, ties to the lower index"},
    {"expert_weights", "MoE routing weights of the chosen experts [T, k], in expert_ids' order"},
    {"moe_out", "sum over the chosen experts of weight * down_e(silu(gate_e x) * up_e x)"},
    // ...and with a shared expert (Qwen3-Next), these after moe_out.
    {"shexp_out", "shared expert: down_s(silu(gate_s x) * up_s x) of ffn_norm"},
    {"shexp_gate", "shared-expert gate sigmoid(ffn_norm . ffn_gate_inp_shexp) [T, 1]"},
    {"ffn_out", "moe_out + shexp_gate * shexp_out (the FFN output)"},
    {"residual_2", "residual_1 + MLP output (the layer output)"},
};

constexpr StageInfo kEmbed[] = {{"embed", "token embedding (+ learned positions)"}};
constexpr StageInfo kHead[] = {{"final_norm", "final norm of the last layer output"},
                               {"logits", "LM head projection"}};

}  // namespace

std::span<const StageInfo> block_stages(BlockKind kind) {
  switch (kind) {
    case BlockKind::decoder: return kDecoder;
    case BlockKind::gpt2: return kGpt2;
    case BlockKind::gdn: return kGdn;
    case BlockKind::gated_attn: return kGatedAttn;
    case BlockKind::embed: return kEmbed;
    case BlockKind::head: return kHead;
  }
  return {};
}

const StageInfo* find_stage(BlockKind kind, std::string_view name) {
  for (const auto& s : block_stages(kind))
    if (s.name == name) return &s;
  return nullptr;
}

bool is_catalog_stage(std::string_view name) {
  for (BlockKind k : {BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn, BlockKind::gated_attn,
                      BlockKind::embed, BlockKind::head})
    if (find_stage(k, name)) return true;
  return false;
}

bool is_moe_stage(std::string_view stage) {
  return stage == "router_logits" || stage == "expert_ids" || stage == "expert_weights" ||
         stage == "moe_out" || is_shared_expert_stage(stage);
}

bool is_shared_expert_stage(std::string_view stage) {
  return stage == "shexp_out" || stage == "shexp_gate" || stage == "ffn_out";
}

int stage_head_width(const ModelConfig& cfg, int layer, std::string_view s) {
  if (layer == kModelLayer) return 0;
  switch (cfg.block_kind(layer)) {
    case BlockKind::decoder:
    case BlockKind::gated_attn:
      return s == "q" || s == "k" || s == "v" || s == "q_norm" || s == "k_norm" || s == "q_rope" ||
                     s == "k_rope" || s == "attn" || s == "attn_gate" || s == "attn_gated"
                 ? cfg.head_dim
                 : 0;
    case BlockKind::gpt2: return s == "qkv" || s == "attn" ? cfg.head_dim : 0;
    case BlockKind::gdn:
      if (s == "q_l2" || s == "k_l2") return cfg.gdn_k_dim;
      if (s == "z_gate" || s == "gdn_out" || s == "gated_norm") return cfg.gdn_v_dim;
      // [q|k|v] heads are one width only where key and value heads are.
      if ((s == "qkv_mixed" || s == "conv") && cfg.gdn_k_dim == cfg.gdn_v_dim) return cfg.gdn_k_dim;
      return 0;
    default: return 0;
  }
}

bool is_discrete_stage(std::string_view stage) { return stage == "expert_ids"; }

bool is_model_level_stage(std::string_view stage) {
  return find_stage(BlockKind::embed, stage) || find_stage(BlockKind::head, stage);
}

OpSet stage_ops(BlockKind kind, std::string_view s) {
  const bool gpt2 = kind == BlockKind::gpt2;
  OpSet ops;
  if (s == "attn_norm" || s == "ffn_norm" || s == "final_norm" || s == "ln_1" || s == "ln_2")
    ops = {Op::RMSNorm, Op::RMSNormPlusOne, Op::LayerNorm};
  else if (s == "q_norm" || s == "k_norm")
    ops = {Op::QkNorm, Op::RMSNorm, Op::RMSNormPlusOne};
  else if (s == "q_rope" || s == "k_rope")
    ops = {Op::RoPE, Op::RoPENeox, Op::RoPEPartial, Op::RoPEFreqFactors};
  else if (s == "attn")
    ops = {Op::GQA, Op::MHA, Op::CausalMask};
  else if (s == "attn_gate" || s == "attn_gated")
    ops = {Op::AttnOutputGate};
  else if (s == "ffn_act")
    ops = {Op::SwiGLU};
  else if (s == "gelu")
    ops = {Op::GeluMlp};
  else if (s == "embed")
    ops = {Op::AbsolutePos};
  else if (s == "gdn_out" || s == "gdn_state")
    ops = {Op::GatedDeltaNet, Op::GdnInplace, Op::GdnInplaceIds};
  else if (s == "conv" || s == "conv_state")
    ops = {Op::SsmConv, Op::SsmConvUpdate, Op::SsmConvUpdateIds};
  else if (s == "expert_ids" || s == "expert_weights")
    ops = {Op::MoeSoftmaxTopK, Op::MoeTopKSoftmax, Op::MoeNormTopK};
  else if (s == "moe_out")
    ops = {Op::MoeExperts, Op::SwiGLU};
  else if (is_shared_expert_stage(s))
    ops = {Op::MoeSharedExpert, Op::SwiGLU};
  // Projections: only the ones whose family carries a bias.
  if (s == "q" || s == "k" || s == "v" ||
      (gpt2 && (s == "qkv" || s == "attn_out" || s == "fc" || s == "proj")))
    ops.add(Op::BiasAdd);
  return ops;
}

std::vector<std::string_view> stages_for(const ModelConfig& cfg, int layer) {
  std::vector<std::string_view> out;
  if (layer == kModelLayer) {
    for (auto k : {BlockKind::embed, BlockKind::head})
      for (const auto& s : block_stages(k)) out.push_back(s.name);
    return out;
  }
  const BlockKind kind = cfg.block_kind(layer);
  for (const auto& s : block_stages(kind)) {
    const bool qk = s.name == "q_norm" || s.name == "k_norm";
    if (qk && !cfg.qk_norm) continue;
    // A MoE layer's experts replace the dense MLP's gate .. down; the shared-expert stages
    // exist only with a shared expert.
    const bool dense_mlp = s.name == "gate" || s.name == "up" || s.name == "ffn_act" || s.name == "down";
    if (cfg.moe() ? dense_mlp : is_moe_stage(s.name)) continue;
    if (is_shared_expert_stage(s.name) && !cfg.shared_expert()) continue;
    out.push_back(s.name);
  }
  return out;
}

std::vector<std::string> expected_stages(const ModelConfig& cfg, BlockKind kind) {
  std::vector<std::string> out;
  if (kind == BlockKind::embed || kind == BlockKind::head) {
    for (const auto& s : block_stages(kind)) out.emplace_back(s.name);
    return out;
  }
  for (int l = 0; l < cfg.n_layers; ++l)
    if (cfg.block_kind(l) == kind) {
      for (std::string_view s : stages_for(cfg, l)) out.emplace_back(s);
      return out;
    }
  for (const auto& s : block_stages(kind)) out.emplace_back(s.name);
  return out;
}

std::regex compile_stage_pattern(const std::string& pattern) {
  if (pattern.size() > kMaxStagePatternChars)
    throw std::invalid_argument(fmt::format("a regex of {} characters is longer than the {} allowed",
                                            pattern.size(), kMaxStagePatternChars));
  // libstdc++ reads the numbers of {n}, {n,m} and a backreference \n into an int without an overflow
  // check: bound every such number before it sees them.
  const auto number_at = [&](std::size_t& i) {  // the digits from i on; i ends past them
    std::uint64_t n = 0;
    for (; i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9'; ++i)
      if ((n = n * 10 + std::uint64_t(pattern[i] - '0')) > kMaxStagePatternNumber)
        throw std::invalid_argument(
            fmt::format("a repeat count or backreference in '{}' is larger than the {} allowed", pattern,
                        kMaxStagePatternNumber));
  };
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] == '\\') {
      ++i;
      if (i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9')
        number_at(i);
      else
        ++i;  // an escaped character, a backslash included
    } else if (pattern[i] == '{') {
      ++i;
      number_at(i);
      if (i < pattern.size() && pattern[i] == ',') number_at(++i);
    } else {
      ++i;
    }
  }
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument(fmt::format("not a valid regex: {}", e.what()));
  }
}

}  // namespace ds
