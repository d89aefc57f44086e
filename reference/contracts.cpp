#include "contracts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace ds::ref {

namespace {

struct Alias {
  std::string_view name, canonical;
};
constexpr Alias kAliases[] = {
    {"llama", "llama"},
    {"llama2", "llama"},
    {"llama3", "llama"},
    {"llama3.1", "llama"},
    {"llama3.2", "llama"},
    {"mistral", "llama"},
    {"qwen2", "qwen2"},
    {"qwen", "qwen2"},
    {"qwen2.5", "qwen2"},
    {"qwen2_5", "qwen2"},
    {"qwen3", "qwen3"},
    {"gpt2", "gpt2"},
    // The dense Qwen3.5 hybrid. "qwen3next" was its name here before; a qwen3next file without
    // experts (this project's older GGUFs) still loads as it (loaders/gguf_reader.cpp).
    {"qwen35", "qwen35"},
    {"qwen3_5", "qwen35"},
    {"qwen3.5", "qwen35"},
    {"qwen3_5_text", "qwen35"},
    {"qwen3moe", "qwen3moe"},
    {"qwen3_moe", "qwen3moe"},
    // Qwen3-Next: the hybrid with a MoE FFN and a gated shared expert in every layer.
    {"qwen3next", "qwen3next"},
    {"qwen3_next", "qwen3next"},
    // Mixtral is llama with experts: llama.cpp writes its GGUF as `llama` with expert_count.
    {"mixtral", "mixtral"},
};

// Seed 001's role groups for the decoder layout.
constexpr std::array<std::string_view, 9> kBase = {
    "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
// A MoE decoder layer: the base roles with the router and the stacked experts for the dense MLP.
constexpr std::array<std::string_view, 10> kMoeBase = {
    "attn_norm", "attn_q",       "attn_k",        "attn_v",      "attn_output",
    "ffn_norm",  "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
// Qwen3-Next's FFN in every layer: the router, the stacked experts, the shared expert and its gate.
constexpr std::array<std::string_view, 8> kMoeShexpFfn = {
    "ffn_gate_inp",   "ffn_gate_exps", "ffn_up_exps",    "ffn_down_exps",
    "ffn_gate_shexp", "ffn_up_shexp",  "ffn_down_shexp", "ffn_gate_inp_shexp"};
constexpr std::array<std::string_view, 2> kQkNorm = {"attn_q_norm", "attn_k_norm"};
constexpr std::array<std::string_view, 3> kBias = {"attn_q_bias", "attn_k_bias", "attn_v_bias"};
constexpr std::array<std::string_view, 12> kGpt2 = {
    "attn_norm", "attn_norm_bias", "attn_qkv", "attn_qkv_bias", "attn_output", "attn_output_bias",
    "ffn_norm",  "ffn_norm_bias",  "ffn_up",   "ffn_up_bias",   "ffn_down",    "ffn_down_bias"};
constexpr std::array<std::string_view, 14> kGdn = {
    "attn_norm",  "attn_qkv", "attn_gate", "ssm_beta", "ssm_alpha", "ssm_a",  "ssm_dt_bias",
    "ssm_conv1d", "ssm_norm", "ssm_out",   "ffn_norm", "ffn_gate",  "ffn_up", "ffn_down"};

template <class R>
void append(std::vector<std::string>& out, const R& roles) {
  for (auto r : roles) out.emplace_back(r);
}
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::decoder: return "decoder";
    case Layout::gpt2: return "gpt2";
    case Layout::hybrid_gdn: return "hybrid_gdn";
    case Layout::decoder_moe: return "decoder_moe";
    case Layout::hybrid_gdn_moe: return "hybrid_gdn_moe";
  }
  return "?";
}

std::string canonical_architecture(std::string_view arch) {
  for (const auto& a : kAliases)
    if (a.name == arch) return std::string(a.canonical);
  return {};
}

std::vector<std::string> known_architectures() {
  return {"llama", "qwen2", "qwen3", "gpt2", "qwen35", "qwen3moe", "mixtral", "qwen3next"};
}

ArchConstraints from_architecture(std::string_view arch) {
  const std::string canon = canonical_architecture(arch);
  ArchConstraints c;  // the default is the unknown-architecture fallback: base roles only
  if (canon == "qwen2") c.has_bias = true;
  if (canon == "qwen3") c.has_qk_norm = true;
  if (canon == "qwen3moe") {
    // Qwen3-30B-A3B and -235B-A22B ship norm_topk_prob true; llama.cpp's qwen3moe graph
    // renormalises unconditionally.
    c.has_qk_norm = true;
    c.layout = Layout::decoder_moe;
    c.moe_routing = "softmax_topk";
    c.moe_norm_topk = true;
  }
  if (canon == "mixtral") {
    c.layout = Layout::decoder_moe;
    c.moe_routing = "topk_softmax";
  }
  if (canon == "gpt2") {
    c.attention_type = "mha";
    c.norm_type = "layernorm";
    c.mlp_type = "gelu_mlp";
    c.positional_encoding = "absolute";
    c.rope_type = "";
    c.has_bias = true;
    c.layout = Layout::gpt2;
  }
  if (canon == "qwen35" || canon == "qwen3next") {
    c.has_qk_norm = true;
    c.norm_plus_one = true;
    c.partial_rope = true;
    c.attn_output_gate = true;
    c.gated_delta_net = true;
    c.layout = Layout::hybrid_gdn;
  }
  if (canon == "qwen3next") {
    // Qwen3-Next-80B-A3B ships norm_topk_prob true; llama.cpp's qwen3next graph renormalises
    // unconditionally. Every layer adds the gated shared expert.
    c.layout = Layout::hybrid_gdn_moe;
    c.moe_routing = "softmax_topk";
    c.moe_norm_topk = true;
    c.shared_expert = true;
  }
  return c;
}

ArchConstraints constraints_of(const ModelConfig& cfg) {
  ArchConstraints c;
  c.attention_type = cfg.n_kv_heads < cfg.n_heads ? "gqa" : "mha";
  switch (cfg.family) {
    case Family::gpt2:
      c = from_architecture("gpt2");
      c.attention_type = cfg.n_kv_heads < cfg.n_heads ? "gqa" : "mha";
      return c;
    case Family::qwen35:
    case Family::qwen3next: c.layout = Layout::hybrid_gdn; break;
    default: c.layout = Layout::decoder; break;
  }
  c.rope_type = cfg.rope_mode == RopeMode::neox ? "neox" : "normal";
  c.has_bias = cfg.qkv_bias;
  c.has_qk_norm = cfg.qk_norm;
  c.norm_plus_one = cfg.norm_plus_one;
  c.partial_rope = cfg.rotary_dim() < cfg.head_dim;
  c.rope_freq_factors = !cfg.rope_freq_factors.empty();
  for (BlockKind k : cfg.layer_kinds) {
    c.attn_output_gate |= k == BlockKind::gated_attn;
    c.gated_delta_net |= k == BlockKind::gdn;
  }
  c.gdn_tiled_heads = c.gated_delta_net && cfg.gdn_head_map == GdnHeadMap::tiled;
  if (cfg.moe()) {
    c.layout = c.layout == Layout::hybrid_gdn ? Layout::hybrid_gdn_moe : Layout::decoder_moe;
    c.moe_routing = std::string(moe_routing_name(cfg.moe_routing));
    c.moe_norm_topk = cfg.moe_routing == MoeRouting::softmax_topk && cfg.moe_norm_topk;
    c.shared_expert = cfg.shared_expert();
  }
  return c;
}

OpSet required_ops(const ArchConstraints& c) {
  OpSet ops{Op::CausalMask};
  ops.add(c.attention_type == "mha" ? Op::MHA : Op::GQA);
  if (c.positional_encoding == "absolute") ops.add(Op::AbsolutePos);
  if (c.positional_encoding == "rope") ops.add(c.rope_type == "normal" ? Op::RoPE : Op::RoPENeox);
  if (c.partial_rope) ops.add(Op::RoPEPartial);
  if (c.rope_freq_factors) ops.add(Op::RoPEFreqFactors);
  ops.add(c.norm_type == "layernorm" ? Op::LayerNorm : Op::RMSNorm);
  if (c.norm_plus_one) ops.add(Op::RMSNormPlusOne);
  ops.add(c.mlp_type == "gelu_mlp" ? Op::GeluMlp : Op::SwiGLU);
  if (c.has_bias) ops.add(Op::BiasAdd);
  if (c.has_qk_norm) ops.add(Op::QkNorm);
  if (c.attn_output_gate) ops.add(Op::AttnOutputGate);
  if (c.gated_delta_net) {
    ops.add(Op::GatedDeltaNet);
    ops.add(Op::SsmConv);
    if (c.gdn_tiled_heads) ops.add(Op::GdnTiledHeads);
  }
  if (!c.moe_routing.empty()) {
    ops.add(Op::MoeExperts);
    ops.add(c.moe_routing == "topk_softmax" ? Op::MoeTopKSoftmax : Op::MoeSoftmaxTopK);
    if (c.moe_norm_topk) ops.add(Op::MoeNormTopK);
    if (c.shared_expert) ops.add(Op::MoeSharedExpert);
  }
  return ops;
}

OpSet required_ops(const ModelConfig& cfg) {
  OpSet ops = required_ops(constraints_of(cfg));
  for (Op op : cfg.gdn_fused.list()) ops.add(op);  // the fused decode variants a run requests
  return ops;
}

namespace {
// The dense MLP's roles swapped for the MoE FFN's (with the shared expert's, as in Qwen3-Next).
void swap_dense_mlp_for_moe(std::vector<std::string>& roles, bool shared_expert) {
  std::erase_if(roles,
                [](const std::string& r) { return r == "ffn_gate" || r == "ffn_up" || r == "ffn_down"; });
  for (std::string_view r : kMoeShexpFfn)
    if (shared_expert || r.find("_shexp") == std::string_view::npos) roles.emplace_back(r);
}
}  // namespace

std::vector<std::string> required_roles(const ArchConstraints& c, BlockKind kind) {
  std::vector<std::string> out;
  switch (kind) {
    case BlockKind::gpt2: append(out, kGpt2); break;
    case BlockKind::gdn: append(out, kGdn); break;
    case BlockKind::decoder:
    case BlockKind::gated_attn:
      if (c.layout == Layout::decoder_moe && kind == BlockKind::decoder)
        append(out, kMoeBase);
      else
        append(out, kBase);
      if (c.has_qk_norm) append(out, kQkNorm);
      if (c.has_bias) append(out, kBias);
      break;
    default: break;
  }
  if (c.layout == Layout::hybrid_gdn_moe && (kind == BlockKind::gdn || kind == BlockKind::gated_attn))
    swap_dense_mlp_for_moe(out, c.shared_expert);
  return sorted(std::move(out));
}

std::vector<std::string> required_roles(const ArchConstraints& c) {
  switch (c.layout) {
    case Layout::gpt2: return required_roles(c, BlockKind::gpt2);
    case Layout::hybrid_gdn:
    case Layout::hybrid_gdn_moe: return required_roles(c, BlockKind::gdn);
    case Layout::decoder:
    case Layout::decoder_moe: break;
  }
  return required_roles(c, BlockKind::decoder);
}

std::vector<std::string> required_roles(const ModelConfig& cfg, int layer) {
  const ArchConstraints c = constraints_of(cfg);
  if (layer < 0) return required_model_roles(c);
  return required_roles(c, cfg.block_kind(layer));
}

std::vector<std::string> required_model_roles(const ArchConstraints& c) {
  std::vector<std::string> out{"token_embd", "output_norm"};
  if (c.norm_type == "layernorm") out.emplace_back("output_norm_bias");
  if (c.positional_encoding == "absolute") out.emplace_back("position_embd");
  return sorted(std::move(out));
}

std::vector<std::string> optional_roles(const ArchConstraints& c, BlockKind kind) {
  std::vector<std::string> out;
  const bool moe_layer = (kind == BlockKind::decoder && c.layout == Layout::decoder_moe) ||
                         (kind == BlockKind::gated_attn && c.layout == Layout::hybrid_gdn_moe);
  if (moe_layer) {
    out = {"attn_output_bias"};  // the experts carry no biases in any MoE checkpoint read here
    if (!c.has_bias) append(out, kBias);
  } else if (kind == BlockKind::decoder || kind == BlockKind::gated_attn) {
    out = {"attn_output_bias", "ffn_gate_bias", "ffn_up_bias", "ffn_down_bias"};
    if (!c.has_bias) append(out, kBias);
  }
  return sorted(std::move(out));
}

std::string role_tensor(int layer, std::string_view role) {
  std::string stem(role), suffix = ".weight";
  if (role == "ssm_a") suffix.clear();  // a bare parameter: -exp(A_log), no .weight
  if (stem.size() > 5 && stem.ends_with("_bias")) {
    stem.resize(stem.size() - 5);
    suffix = ".bias";
  }
  if (layer < 0) return stem + suffix;
  return layer_weight(layer, stem + suffix);
}

std::vector<MissingWeight> check_completeness(const Model& model) {
  const ModelConfig& cfg = model.config;
  const ArchConstraints c = constraints_of(cfg);
  std::vector<MissingWeight> missing;
  auto need = [&](int layer, const std::string& role) {
    std::string name = role_tensor(layer, role);
    const auto shape = model.weights.shape_of(name);
    if (!shape || numel(*shape) == 0) missing.push_back({role, std::move(name), layer});
  };
  for (const auto& r : required_model_roles(c)) need(-1, r);
  for (int l = 0; l < cfg.n_layers; ++l)
    for (const auto& r : required_roles(c, cfg.block_kind(l))) need(l, r);
  return missing;
}

void require_complete(const Model& model) {
  const auto missing = check_completeness(model);
  if (missing.empty()) return;
  std::vector<std::string> names;
  for (const auto& m : missing) names.push_back(fmt::format("{} (role {})", m.tensor, m.role));
  const std::string head =
      fmt::format("{}: incomplete weights for architecture {}, {} required tensor(s) missing",
                  model.config.name, model.config.arch_name(), missing.size());
  if (missing.size() <= kMissingListed) throw ModelError(fmt::format("{}: {}", head, fmt::join(names, ", ")));
  // A config.json of 100 layers without their tensors misses hundreds: count them per role and
  // name the first few; the full list goes where a program reads it (the trace, --json).
  std::vector<std::pair<std::string, int>> per_role;
  for (const auto& m : missing) {
    auto it =
        std::find_if(per_role.begin(), per_role.end(), [&](const auto& p) { return p.first == m.role; });
    if (it == per_role.end()) it = per_role.insert(per_role.end(), {m.role, 0});
    ++it->second;
  }
  std::vector<std::string> roles;
  for (const auto& [role, n] : per_role) roles.push_back(fmt::format("{} x{}", role, n));
  const std::vector<std::string> first(names.begin(), names.begin() + kMissingListed);
  const std::string by_role = fmt::format("\n  per role: {}", fmt::join(roles, ", "));
  // The first line stays short either way: it is the verdict of the run's trace and reports.
  throw ModelError(fmt::format("{}{}\n  first: {} (and {} more)\n  every name: `driftscope report TRACE` of "
                               "the run's --trace, or stop_reason in its --json",
                               head, by_role, fmt::join(first, ", "), missing.size() - kMissingListed),
                   fmt::format("{}{}\n  missing: {}", head, by_role, fmt::join(names, ", ")));
}

}  // namespace ds::ref
