#include "ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

namespace ds {

namespace {
constexpr std::array<std::string_view, unsigned(Op::kCount)> kOpNames = {"RoPE",
                                                                         "RoPENeox",
                                                                         "RoPEPartial",
                                                                         "RoPEFreqFactors",
                                                                         "GQA",
                                                                         "MHA",
                                                                         "CausalMask",
                                                                         "SwiGLU",
                                                                         "GeluMlp",
                                                                         "RMSNorm",
                                                                         "RMSNormPlusOne",
                                                                         "LayerNorm",
                                                                         "BiasAdd",
                                                                         "QkNorm",
                                                                         "AbsolutePos",
                                                                         "AttnOutputGate",
                                                                         "GatedDeltaNet",
                                                                         "GdnInplace",
                                                                         "GdnInplaceIds",
                                                                         "SsmConv",
                                                                         "SsmConvUpdate",
                                                                         "SsmConvUpdateIds",
                                                                         "GdnTiledHeads",
                                                                         "MoeSoftmaxTopK",
                                                                         "MoeTopKSoftmax",
                                                                         "MoeNormTopK",
                                                                         "MoeExperts",
                                                                         "MoeSharedExpert"};
}  // namespace

std::string_view op_name(Op op) { return kOpNames[unsigned(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (unsigned i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return Op(i);
  return std::nullopt;
}

OpSet::OpSet(std::initializer_list<Op> ops) {
  for (Op op : ops) add(op);
}

OpSet OpSet::intersect(const OpSet& other) const {
  OpSet r;
  r.bits_ = bits_ & other.bits_;
  return r;
}

OpSet OpSet::minus(const OpSet& other) const {
  OpSet r;
  r.bits_ = bits_ & ~other.bits_;
  return r;
}

std::vector<Op> OpSet::list() const {
  std::vector<Op> out;
  for (unsigned i = 0; i < unsigned(Op::kCount); ++i)
    if (bits_.test(i)) out.push_back(Op(i));
  return out;
}

std::string OpSet::str() const {
  std::vector<std::string_view> names;
  for (Op op : list()) names.push_back(op_name(op));
  return fmt::format("[{}]", fmt::join(names, ", "));
}

}  // namespace ds
