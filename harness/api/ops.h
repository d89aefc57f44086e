// Operations a model requires and a backend declares (the capability gate's vocabulary: a kernel
// set without an op the model needs must be refused, not run). Variants of one op are separate ops, so a
// backend that only has the plain op is never silently handed the fused variant.
#pragma once

#include <bitset>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds {

enum class Op : unsigned {
  RoPE,             // rotary embedding, normal (interleaved pairs)
  RoPENeox,         // rotary embedding, neox (split halves)
  RoPEPartial,      // rotary on a prefix of head_dim only
  RoPEFreqFactors,  // per-pair frequency factors (Llama-3 "llama3" and linear RoPE scaling)
  GQA,
  MHA,
  CausalMask,
  SwiGLU,
  GeluMlp,
  RMSNorm,
  RMSNormPlusOne,  // (1 + w) weight form
  LayerNorm,
  BiasAdd,
  QkNorm,
  AbsolutePos,
  AttnOutputGate,    // sigmoid-gated attention output (qwen3next full attention)
  GatedDeltaNet,     // plain GDN recurrence, state appended to the output
  GdnInplace,        // fused A: final state written in place into the state cache
  GdnInplaceIds,     // fused B: prior state read through an ids map
  SsmConv,           // plain SSM conv over a pre-concatenated window
  SsmConvUpdate,     // fused C: conv update with in-place ring state
  SsmConvUpdateIds,  // fused D: C reading its state through an ids map
  GdnTiledHeads,     // GDN value head h reads key head h mod n_k (the ggml broadcast of Qwen3.5 GGUFs)
  // Mixture-of-experts routing rules (docs/moe.md), one op each, so a kernel that implements one
  // rule is never handed the other: a wrong rule gives plausible weights, not a crash.
  MoeSoftmaxTopK,   // softmax over all router logits, then top-k (Qwen3-MoE)
  MoeTopKSoftmax,   // top-k of the router logits, then softmax over the chosen (Mixtral)
  MoeNormTopK,      // the chosen softmax_topk weights renormalised to sum 1 (norm_topk_prob)
  MoeExperts,       // per-expert SwiGLU MLPs, combined by the routing weights
  MoeSharedExpert,  // a SwiGLU shared expert behind a sigmoid gate, added to the routed output (Qwen3-Next)
  kCount
};

std::string_view op_name(Op op);
std::optional<Op> parse_op(std::string_view name);

class OpSet {
 public:
  OpSet() = default;
  OpSet(std::initializer_list<Op> ops);
  void add(Op op) { bits_.set(unsigned(op)); }
  void remove(Op op) { bits_.reset(unsigned(op)); }
  bool has(Op op) const { return bits_.test(unsigned(op)); }
  bool contains(const OpSet& other) const { return (other.bits_ & ~bits_).none(); }
  OpSet minus(const OpSet& other) const;
  OpSet intersect(const OpSet& other) const;
  OpSet& operator|=(const OpSet& other) {
    bits_ |= other.bits_;
    return *this;
  }
  std::size_t size() const { return bits_.count(); }
  bool empty() const { return bits_.none(); }
  std::vector<Op> list() const;
  std::string str() const;  // "[RoPE, GQA, ...]"
  bool operator==(const OpSet&) const = default;

 private:
  std::bitset<unsigned(Op::kCount)> bits_;
};

}  // namespace ds
