#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "family.h"
#include "hf.h"
#include "ops.h"

namespace ds::ref {

namespace {

class Fields {
 public:
  Fields(const nlohmann::json& j, const std::string& file) : j_(j), file_(file) {}
  bool has(const char* k) const { return j_.contains(k) && !j_[k].is_null(); }
  // A positive integer up to `max` (family.h's bounds), checked before anything is sized by it.
  int integer(const char* k, std::int64_t max) const {
    if (!has(k)) throw ModelError(fmt::format("{}: missing field {}", file_, k));
    const auto& v = j_[k];
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() ? v.get<std::uint64_t>() == 0 || v.get<std::uint64_t>() > std::uint64_t(max)
                                : v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > max))
      throw ModelError(
          fmt::format("{}: field {} = {} must be an integer from 1 to {}", file_, k, v.dump(), max));
    return int(v.get<std::int64_t>());
  }
  int integer(const char* k, int fallback, std::int64_t max) const {
    return has(k) ? integer(k, max) : fallback;
  }
  double real(const char* k, double fallback) const { return number(j_, k, k, fallback); }
  // Field `k` of object `obj` (called `name` in messages) as a number; `fallback` when absent.
  double number(const nlohmann::json& obj, const char* k, std::string_view name, double fallback) const {
    if (!obj.is_object() || !obj.contains(k) || obj[k].is_null()) return fallback;
    if (!obj[k].is_number()) throw ModelError(fmt::format("{}: field {} must be a number", file_, name));
    // JSON has no Inf or NaN, but 1e999 reads as +Inf: a hyper-parameter that is not finite (a norm
    // epsilon, a RoPE base) would put Inf or NaN in every stage of both sides and hide any bug.
    const double v = obj[k].get<double>();
    if (!std::isfinite(v))
      throw ModelError(fmt::format("{}: field {} = {} must be a finite number", file_, name, v));
    return v;
  }
  bool boolean(const char* k, bool fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_boolean()) throw ModelError(fmt::format("{}: field {} must be true or false", file_, k));
    return j_[k].get<bool>();
  }
  const nlohmann::json& at(const char* k) const { return j_[k]; }

 private:
  const nlohmann::json& j_;
  const std::string& file_;
};

std::string hf_model_type(Family f) {
  switch (f) {
    case Family::llama: return "llama";
    case Family::qwen2: return "qwen2";
    case Family::qwen3: return "qwen3";
    case Family::gpt2: return "gpt2";
    case Family::qwen35: return "qwen3_5_text";  // separate in_proj_qkv / z / b / a
    case Family::qwen3moe: return "qwen3_moe";
    case Family::qwen3next: return "qwen3_next";  // fused in_proj_qkvz / in_proj_ba, as released
  }
  return "?";
}

}  // namespace

ModelConfig hf_config(const nlohmann::json& root, const std::string& file) {
  // Multimodal checkpoints (Qwen3.5) keep the language model's fields under text_config.
  const nlohmann::json& j =
      root.contains("text_config") && !root.contains("hidden_size") ? root["text_config"] : root;
  const Fields f(j, file);
  if (!j.contains("model_type") || !j["model_type"].is_string())
    throw ModelError(fmt::format("{}: missing field model_type", file));
  const std::string type = j["model_type"].get<std::string>();
  auto family = family_of(type);
  if (!family) throw ModelError(fmt::format("{}: model_type '{}' is not supported", file, type));
  // A qwen3_next config without experts is the dense hybrid (this project's fixtures before).
  if (*family == Family::qwen3next &&
      !(f.has("num_experts") && j["num_experts"].is_number() && j["num_experts"].get<double>() > 0))
    family = Family::qwen35;
  ModelConfig c;
  c.name = file;
  c.arch = type;
  c.family = *family;
  if (c.family == Family::gpt2) {
    c.hidden = f.integer("n_embd", kMaxDim);
    c.n_layers = f.integer("n_layer", kMaxLayers);
    c.n_heads = c.n_kv_heads = f.integer("n_head", kMaxHeads);
    c.head_dim = c.hidden / c.n_heads;
    c.ffn = f.integer("n_inner", 4 * c.hidden, kMaxDim);
    c.max_positions = f.integer("n_positions", 1024, kMaxPositions);
    c.vocab = f.integer("vocab_size", kMaxVocab);
    c.norm_eps = f.real("layer_norm_epsilon", 1e-5);
    c.tied_embeddings = true;
    for (const char* k : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"})
      if (f.boolean(k, false)) throw ModelError(fmt::format("{}: field {} = true is not supported", file, k));
  } else {
    c.hidden = f.integer("hidden_size", kMaxDim);
    c.n_layers = f.integer("num_hidden_layers", kMaxLayers);
    c.n_heads = f.integer("num_attention_heads", kMaxHeads);
    c.n_kv_heads = f.integer("num_key_value_heads", c.n_heads, kMaxHeads);
    c.head_dim = f.integer("head_dim", c.hidden / c.n_heads, kMaxDim);
    c.ffn = f.integer("intermediate_size", kMaxDim);
    c.vocab = f.integer("vocab_size", kMaxVocab);
    c.max_positions = f.integer("max_position_embeddings", 2048, kMaxPositions);
    c.norm_eps = f.real("rms_norm_eps", 1e-6);
    c.tied_embeddings = f.boolean("tie_word_embeddings", false);
    const nlohmann::json rope = f.has("rope_parameters") ? f.at("rope_parameters") : nlohmann::json::object();
    c.rope_theta = f.real("rope_theta", f.number(rope, "rope_theta", "rope_parameters.rope_theta", 10000.0));
    c.partial_rotary =
        f.real("partial_rotary_factor",
               f.number(rope, "partial_rotary_factor", "rope_parameters.partial_rotary_factor", 1.0));
    if (f.has("rope_scaling")) {
      const auto& s = f.at("rope_scaling");
      if (!s.is_object()) throw ModelError(fmt::format("{}: field rope_scaling must be an object", file));
      std::string kind = "default";
      for (const char* k : {"type", "rope_type"})
        if (s.contains(k) && !s[k].is_null()) {
          if (!s[k].is_string())
            throw ModelError(fmt::format("{}: field rope_scaling.{} must be a string", file, k));
          kind = s[k].get<std::string>();
        }
      // A scaling parameter, which must be a positive number.
      auto need = [&](const char* k) {
        if (!s.contains(k) || !s[k].is_number() || !(s[k].get<double>() > 0) ||
            !std::isfinite(s[k].get<double>()))
          throw ModelError(
              fmt::format("{}: field rope_scaling.{} missing or not positive for {} scaling", file, k, kind));
        return s[k].get<double>();
      };
      if (kind == "llama3") {
        c.rope_freq_factors =
            llama3_freq_factors(c.rotary_dim(), c.rope_theta, need("factor"), need("low_freq_factor"),
                                need("high_freq_factor"), need("original_max_position_embeddings"));
      } else if (kind == "linear") {
        // Positions divided by the factor: the same angles as every inv_freq divided by it, which is
        // how the rope op takes per-pair factors.
        c.rope_freq_factors.assign(std::size_t(c.rotary_dim() / 2), need("factor"));
      } else if (kind != "default") {
        throw ModelError(fmt::format(
            "{}: field rope_scaling.rope_type = {} is not supported (default, linear and llama3 are)", file,
            kind));
      }
    }
    if (f.boolean("attention_bias", false) && c.family == Family::llama) c.qkv_bias = c.o_bias = true;
    if (type == "mistral" && f.has("sliding_window"))
      c.sliding_window = f.integer("sliding_window", kMaxPositions);
    if (f.boolean("use_sliding_window", false))
      throw ModelError(
          fmt::format("{}: field use_sliding_window = true (per-layer windows) is not supported", file));
    if (f.boolean("mlp_bias", false)) c.mlp_bias = true;
  }
  if (family_has_experts(c.family) &&
      (type == "qwen3_moe" || type == "qwen3moe" || type == "mixtral" || c.family == Family::qwen3next)) {
    // Qwen3-MoE: num_experts of moe_intermediate_size; Mixtral: num_local_experts of intermediate_size.
    const bool mixtral = c.family == Family::llama;
    c.n_experts = f.integer(mixtral ? "num_local_experts" : "num_experts", kMaxExperts);
    c.n_experts_used = f.integer("num_experts_per_tok", kMaxExperts);
    if (c.n_experts_used > c.n_experts)
      throw ModelError(fmt::format("{}: field num_experts_per_tok = {} is more than the {} experts", file,
                                   c.n_experts_used, c.n_experts));
    c.expert_ffn = mixtral ? c.ffn : f.integer("moe_intermediate_size", kMaxDim);
    // transformers' defaults: Qwen3MoeConfig false, Qwen3NextConfig true.
    c.moe_norm_topk = !mixtral && f.boolean("norm_topk_prob", c.family == Family::qwen3next);
    // Qwen3-Next's shared expert (transformers' Qwen3NextConfig default width 512).
    if (c.family == Family::qwen3next)
      c.shared_expert_ffn = f.integer("shared_expert_intermediate_size", 512, kMaxDim);
    // Every layer sparse: decoder_sparse_step 1 and no dense mlp_only_layers (as every released
    // Qwen3-MoE); a mix of dense and MoE layers is refused rather than read as all-MoE.
    if (!mixtral && f.integer("decoder_sparse_step", 1, kMaxLayers) != 1)
      throw ModelError(
          fmt::format("{}: field decoder_sparse_step = {}: only every layer sparse (1) is supported", file,
                      f.at("decoder_sparse_step").dump()));
    if (f.has("mlp_only_layers") && !(f.at("mlp_only_layers").is_array() && f.at("mlp_only_layers").empty()))
      throw ModelError(
          fmt::format("{}: field mlp_only_layers = {}: dense layers in a MoE model are not supported", file,
                      f.at("mlp_only_layers").dump()));
  } else {
    // A mixture-of-experts MLP in another family (Qwen3-Next checkpoints, Qwen2-MoE) would
    // otherwise surface as missing dense ffn tensors; say what is actually unsupported.
    for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"})
      if (f.has(key) && f.at(key).is_number() && f.at(key).get<double>() > 0)
        throw ModelError(fmt::format(
            "{}: field {} = {}: mixture-of-experts MLPs are not supported for model_type {} (they "
            "are for qwen3_moe, qwen3_next and mixtral)",
            file, key, f.at(key).dump(), type));
  }
  if (is_gdn_hybrid(c.family)) {
    c.gdn_k_heads = f.integer("linear_num_key_heads", kMaxHeads);
    c.gdn_v_heads = f.integer("linear_num_value_heads", kMaxHeads);
    c.gdn_k_dim = f.integer("linear_key_head_dim", kMaxDim);
    c.gdn_v_dim = f.integer("linear_value_head_dim", kMaxDim);
    c.conv_kernel = f.integer("linear_conv_kernel_dim", 4, kMaxDim);
    c.full_attention_interval = f.integer("full_attention_interval", 4, kMaxLayers);
    c.norm_plus_one = true;  // HF stores w and applies (1 + w)
    c.gdn_head_map = GdnHeadMap::grouped;
  }
  apply_family(c);
  if (is_gdn_hybrid(c.family) && f.has("layer_types")) {
    const auto& types = f.at("layer_types");
    if (!types.is_array() || int(types.size()) != c.n_layers)
      throw ModelError(fmt::format("{}: field layer_types must list {} layers", file, c.n_layers));
    for (int l = 0; l < c.n_layers; ++l) {
      const auto& v = types[std::size_t(l)];
      const std::string t = v.is_string() ? v.get<std::string>() : v.dump();
      if (t != "linear_attention" && t != "full_attention")
        throw ModelError(fmt::format("{}: field layer_types[{}] = {} is unknown", file, l, t));
      c.layer_kinds[std::size_t(l)] = t == "full_attention" ? BlockKind::gated_attn : BlockKind::gdn;
    }
  }
  return c;
}

nlohmann::json hf_config_json(const ModelConfig& c) {
  nlohmann::json j;
  j["model_type"] = hf_model_type(c.family);
  j["vocab_size"] = c.vocab;
  if (c.family == Family::gpt2) {
    j["n_embd"] = c.hidden;
    j["n_layer"] = c.n_layers;
    j["n_head"] = c.n_heads;
    j["n_inner"] = c.ffn;
    j["n_positions"] = c.max_positions;
    j["layer_norm_epsilon"] = c.norm_eps;
    return j;
  }
  if (!c.rope_freq_factors.empty())
    throw ModelError(fmt::format(
        "{}: rope_freq_factors cannot be written to config.json (only llama3 parameters can)", c.name));
  j["hidden_size"] = c.hidden;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["intermediate_size"] = c.ffn;
  j["max_position_embeddings"] = c.max_positions;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = c.tied_embeddings;
  if (c.sliding_window > 0) {
    j["model_type"] = "mistral";
    j["sliding_window"] = c.sliding_window;
  }
  if (c.partial_rotary != 1.0) j["partial_rotary_factor"] = c.partial_rotary;
  if (c.moe() && c.family == Family::llama) {
    j["model_type"] = "mixtral";
    j["num_local_experts"] = c.n_experts;
    j["num_experts_per_tok"] = c.n_experts_used;
    j["intermediate_size"] = c.expert_ffn;
  } else if (c.moe()) {
    j["num_experts"] = c.n_experts;
    j["num_experts_per_tok"] = c.n_experts_used;
    j["moe_intermediate_size"] = c.expert_ffn;
    j["norm_topk_prob"] = c.moe_norm_topk;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = nlohmann::json::array();
    if (c.shared_expert()) j["shared_expert_intermediate_size"] = c.shared_expert_ffn;
  }
  if (is_gdn_hybrid(c.family)) {
    j["linear_num_key_heads"] = c.gdn_k_heads;
    j["linear_num_value_heads"] = c.gdn_v_heads;
    j["linear_key_head_dim"] = c.gdn_k_dim;
    j["linear_value_head_dim"] = c.gdn_v_dim;
    j["linear_conv_kernel_dim"] = c.conv_kernel;
    j["full_attention_interval"] = c.full_attention_interval;
    auto& types = j["layer_types"] = nlohmann::json::array();
    for (BlockKind k : c.layer_kinds)
      types.push_back(k == BlockKind::gdn ? "linear_attention" : "full_attention");
  }
  return j;
}

}  // namespace ds::ref
