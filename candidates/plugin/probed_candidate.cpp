#include "probed_candidate.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace ds {

void put_strings(std::string& buf, const std::vector<std::string>& v) {
  wire::put_u64(buf, v.size());
  for (const auto& s : v) wire::put_str(buf, s);
}

std::vector<std::string> read_strings(wire::Reader& r) {
  const std::uint64_t n = r.u64();
  if (n > r.buf.size())
    throw wire::Malformed(fmt::format("a list of {} strings in {} bytes", n, r.buf.size()));
  std::vector<std::string> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(r.str());
  return v;
}

std::vector<BlockKind> plan_kinds(const ModelConfig& cfg, BlockKind also) {
  std::vector<BlockKind> kinds = {BlockKind::embed, BlockKind::head};
  for (BlockKind k : cfg.layer_kinds)
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  if (std::find(kinds.begin(), kinds.end(), also) == kinds.end()) kinds.push_back(also);
  return kinds;
}

Plans read_plans(wire::Reader& r, BlockKind wanted) {
  Plans read;
  for (std::uint64_t n = r.u64(); n--;) {
    const std::uint64_t k = r.u64();
    if (k > std::uint64_t(BlockKind::head)) throw wire::Malformed(fmt::format("a block kind {}", k));
    auto& steps = read[BlockKind(k)];
    for (std::uint64_t m = r.u64(); m--;) {
      KernelStep s;
      s.name = r.str();
      s.inputs = read_strings(r);
      s.outputs = read_strings(r);
      steps.push_back(std::move(s));
    }
  }
  if (!read.count(wanted))
    throw wire::Malformed(fmt::format("no plan for the {} blocks asked for", block_kind_name(wanted)));
  return read;
}

ProbedTraits read_traits(wire::Reader& r, const std::function<void(const std::string& op)>& unknown_op) {
  ProbedTraits t;
  for (const std::string& op : read_strings(r)) {
    if (const auto parsed = parse_op(op))
      t.caps.add(*parsed);
    else
      unknown_op(op);
  }
  t.unavailable = r.str();
  t.batched_kinds = r.u64();
  t.order_varies_kinds = r.u64();
  const std::uint64_t top_k = r.u64(), experts = r.u64();
  if (top_k > std::uint64_t(std::numeric_limits<int>::max()) ||
      experts > std::uint64_t(std::numeric_limits<int>::max()))
    throw wire::Malformed(fmt::format("MoE limits {} / {} out of range", top_k, experts));
  t.moe_limits = {int(top_k), int(experts)};
  return t;
}

void ProbedCandidate::set_traits(ProbedTraits t) {
  caps_ = t.caps;
  unavailable_ = std::move(t.unavailable);
  batched_kinds_ = t.batched_kinds;
  order_varies_kinds_ = t.order_varies_kinds;
  moe_limits_ = t.moe_limits;
}

std::vector<KernelStep> ProbedCandidate::cached_plan(
    const ModelConfig& cfg, BlockKind kind,
    const std::function<std::string(const std::vector<BlockKind>&)>& probe) const {
  const std::string key = config_json(cfg);
  if (key != plans_key_ || !plans_.count(kind)) {
    const std::string reply = probe(plan_kinds(cfg, kind));
    plans_ = read_answer("plan", [&] {
      wire::Reader r{reply};
      return read_plans(r, kind);
    });
    plans_key_ = key;
  }
  return plans_.at(kind);
}

std::string config_json(const ModelConfig& c) {
  std::vector<std::string> gdn_fused;
  for (Op op : c.gdn_fused.list()) gdn_fused.emplace_back(op_name(op));
  nlohmann::json j = {
      {"name", c.name},
      {"arch", std::string(c.arch_name())},
      {"family", std::string(family_name(c.family))},
      {"n_layers", c.n_layers},
      {"hidden", c.hidden},
      {"n_heads", c.n_heads},
      {"n_kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"ffn", c.ffn},
      {"vocab", c.vocab},
      {"max_positions", c.max_positions},
      {"sliding_window", c.sliding_window},
      {"rope_theta", c.rope_theta},
      {"norm_eps", c.norm_eps},
      {"partial_rotary", c.partial_rotary},
      {"rotary_dim", c.rotary_dim()},
      {"rope_mode", std::string(rope_mode_name(c.rope_mode))},
      {"qk_rows_permuted", c.qk_rows_permuted},
      {"rope_freq_factors", c.rope_freq_factors},
      {"qkv_bias", c.qkv_bias},
      {"o_bias", c.o_bias},
      {"mlp_bias", c.mlp_bias},
      {"qk_norm", c.qk_norm},
      {"tied_embeddings", c.tied_embeddings},
      {"norm_plus_one", c.norm_plus_one},
      {"attn_scale_divide", c.attn_scale_divide},
      {"full_attention_interval", c.full_attention_interval},
      {"gdn_k_heads", c.gdn_k_heads},
      {"gdn_v_heads", c.gdn_v_heads},
      {"gdn_k_dim", c.gdn_k_dim},
      {"gdn_v_dim", c.gdn_v_dim},
      {"conv_kernel", c.conv_kernel},
      {"gdn_head_map", std::string(gdn_head_map_name(c.gdn_head_map))},
      {"gdn_state_layout", c.gdn_state_layout == GdnStateLayout::key_major ? "key_major" : "value_major"},
      {"conv_state_len", c.conv_state_len == ConvStateLen::k ? "k" : "k_minus_1"},
      {"gdn_fused", gdn_fused},
      {"n_experts", c.n_experts},
      {"n_experts_used", c.n_experts_used},
      {"expert_ffn", c.expert_ffn},
      {"moe_routing", std::string(moe_routing_name(c.moe_routing))},
      {"moe_norm_topk", c.moe_norm_topk},
      {"shared_expert_ffn", c.shared_expert_ffn}};
  auto& kinds = j["layer_kinds"] = nlohmann::json::array();
  for (BlockKind k : c.layer_kinds) kinds.push_back(std::string(block_kind_name(k)));
  return j.dump();
}

}  // namespace ds
