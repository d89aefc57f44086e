// Model-family contracts (seeds 000 GH-280 and 001 architecture-requirements-v1): which ops a
// model requires (the capability gate) and which weight roles it must have (the completeness
// gate). fixtures/contracts/*.yaml is the source of truth; this is its C++ derivation, and
// tests/reference/contracts_test.cpp checks the two agree for every architecture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"  // api ops.h (OpSet); reference/ops.h shadows that name here
#include "model.h"
#include "model_error.h"

namespace ds::ref {

// How a layer is laid out: the seed's decoder matrix (base / +qk_norm / +bias), GPT-2's fused
// LayerNorm block, the Qwen3-Next hybrid (GDN layers + gated full attention), or the decoder
// with a mixture-of-experts FFN (router + stacked experts in place of ffn_gate/up/down), or the
// hybrid whose every FFN is one, plus a gated shared expert (Qwen3-Next).
enum class Layout { decoder, gpt2, hybrid_gdn, decoder_moe, hybrid_gdn_moe };

struct ArchConstraints {
  std::string attention_type = "gqa";        // gqa | mha
  std::string norm_type = "rmsnorm";         // rmsnorm | layernorm
  std::string mlp_type = "swiglu";           // swiglu | gelu_mlp
  std::string positional_encoding = "rope";  // rope | absolute
  std::string rope_type = "neox";            // neox | normal (rope only)
  bool has_bias = false;                     // q/k/v projection biases
  bool has_qk_norm = false;
  bool norm_plus_one = false;  // RMSNorm weights applied as (1 + w)
  bool partial_rope = false;
  bool rope_freq_factors = false;  // RoPE scaling: per-pair frequency factors (not in a family's defaults)
  bool attn_output_gate = false;
  bool gated_delta_net = false;
  bool gdn_tiled_heads = false;  // GDN value head h reads key head h mod n_k (not floor(h / rho))
  std::string moe_routing;       // "" (dense MLP) | softmax_topk | topk_softmax (moe_routing_name)
  bool moe_norm_topk = false;    // softmax_topk's chosen weights renormalised (norm_topk_prob)
  bool shared_expert = false;    // a SwiGLU shared expert behind a sigmoid gate (Qwen3-Next)
  Layout layout = Layout::decoder;
  bool operator==(const ArchConstraints&) const = default;
};

std::string_view layout_name(Layout l);
// Resolves aliases ("llama3", "mistral" -> llama; "qwen", "qwen2.5" -> qwen2; "qwen3_5" -> qwen35;
// "qwen3_next" -> qwen3next; "qwen3_moe" -> qwen3moe). An unknown architecture gets the default (base)
// constraints.
ArchConstraints from_architecture(std::string_view arch);
// The canonical architecture an alias resolves to; empty when unknown.
std::string canonical_architecture(std::string_view arch);
// Architectures the contracts know (canonical names).
std::vector<std::string> known_architectures();
// The constraints a concrete config implies (a loaded GGUF may differ from its family's
// defaults, e.g. (1 + w) norms stored pre-added).
ArchConstraints constraints_of(const ModelConfig& cfg);

OpSet required_ops(const ArchConstraints& c);
OpSet required_ops(const ModelConfig& cfg);

// Weight roles are GGUF tensor stems: "attn_q", "attn_q_bias" (-> attn_q.bias), "ssm_a".
// Per-layer roles of a block kind, sorted. For the decoder layout these are the seed's 9 base
// roles, +2 with QK-norm, +3 with bias.
std::vector<std::string> required_roles(const ArchConstraints& c, BlockKind kind);
// Required per-layer roles of the layout's main block kind (decoder, gpt2, or gdn for hybrid).
std::vector<std::string> required_roles(const ArchConstraints& c);
// Required roles of one layer of a concrete model (kModelLayer: the model-level roles).
std::vector<std::string> required_roles(const ModelConfig& cfg, int layer);
// Model-level required roles (token_embd, output_norm, ...).
std::vector<std::string> required_model_roles(const ArchConstraints& c);
// Roles used when present but never required (output when tied, extra biases).
std::vector<std::string> optional_roles(const ArchConstraints& c, BlockKind kind);
// Canonical tensor name of a role: role_tensor(2, "attn_q_bias") == "blk.2.attn_q.bias";
// layer kModelLayer gives a model-level name.
std::string role_tensor(int layer, std::string_view role);

struct MissingWeight {
  std::string role;
  std::string tensor;
  int layer;  // -1 for model-level tensors
};
// Every required tensor the model lacks (absent or empty), in layer order.
std::vector<MissingWeight> check_completeness(const Model& model);
// Throws ModelError naming every missing tensor; past kMissingListed of them its message is a
// summary (count per role, the first names) and ModelError::full() the whole list.
inline constexpr std::size_t kMissingListed = 6;
void require_complete(const Model& model);

}  // namespace ds::ref
