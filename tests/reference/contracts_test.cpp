// Seed 001 (architecture-requirements-v1): FALSIFY-ARCH-001..012, plus the capability-gate
// ops of seed 000, against the YAML contracts in fixtures/contracts (the source of truth).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "contracts.h"
#include "reference.h"
#include "synthetic.h"

namespace ds::ref {
namespace {

namespace fs = std::filesystem;
using Roles = std::vector<std::string>;

const fs::path kDir = fs::path(DRIFTSCOPE_FIXTURES_DIR) / "contracts";

Roles sorted(Roles r) {
  std::sort(r.begin(), r.end());
  return r;
}
Roles roles_of(const YAML::Node& n) { return sorted(n.as<Roles>()); }
bool contains_all(const Roles& big, const Roles& small) {
  const std::set<std::string> b(big.begin(), big.end());
  return std::all_of(small.begin(), small.end(), [&](const auto& r) { return b.count(r) > 0; });
}

Layout parse_layout(const std::string& s) {
  for (Layout l :
       {Layout::decoder, Layout::gpt2, Layout::hybrid_gdn, Layout::decoder_moe, Layout::hybrid_gdn_moe})
    if (layout_name(l) == s) return l;
  throw std::invalid_argument("unknown layout " + s);
}

ArchConstraints parse_constraints(const YAML::Node& n) {
  ArchConstraints c;
  c.attention_type = n["attention_type"].as<std::string>();
  c.norm_type = n["norm_type"].as<std::string>();
  c.mlp_type = n["mlp_type"].as<std::string>();
  c.positional_encoding = n["positional_encoding"].as<std::string>();
  c.rope_type = n["rope_type"].as<std::string>();
  c.has_bias = n["has_bias"].as<bool>();
  c.has_qk_norm = n["qk_norm"].as<bool>();
  c.norm_plus_one = n["norm_plus_one"].as<bool>();
  c.partial_rope = n["partial_rope"].as<bool>();
  c.attn_output_gate = n["attn_output_gate"].as<bool>();
  c.gated_delta_net = n["gated_delta_net"].as<bool>();
  c.layout = parse_layout(n["layout"].as<std::string>());
  // Dense families leave the MoE keys out.
  if (n["moe_routing"]) c.moe_routing = n["moe_routing"].as<std::string>();
  if (n["moe_norm_topk"]) c.moe_norm_topk = n["moe_norm_topk"].as<bool>();
  if (n["shared_expert"]) c.shared_expert = n["shared_expert"].as<bool>();
  return c;
}

BlockKind parse_kind(const std::string& s) {
  for (BlockKind k : {BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn, BlockKind::gated_attn})
    if (block_kind_name(k) == s) return k;
  throw std::invalid_argument("unknown block kind " + s);
}

OpSet parse_ops(const YAML::Node& n) {
  OpSet ops;
  for (const auto& name : n.as<std::vector<std::string>>()) {
    const auto op = parse_op(name);
    if (!op) throw std::invalid_argument("unknown op " + name);
    ops.add(*op);
  }
  return ops;
}

struct FamilyContract {
  std::string file;
  YAML::Node y;
};
std::vector<FamilyContract> families() {
  // Sorted as paths: YAML::Node assignment writes through to the node, so nodes must not be
  // moved around by std::sort.
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".yaml" && e.path().filename() != "architecture-requirements.yaml")
      paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<FamilyContract> out;
  out.reserve(paths.size());
  for (const auto& p : paths) out.push_back({p.filename().string(), YAML::LoadFile(p.string())});
  return out;
}
const YAML::Node& requirements() {
  static const YAML::Node n = YAML::LoadFile((kDir / "architecture-requirements.yaml").string());
  return n;
}
Roles group(const char* name) { return roles_of(requirements()["role_groups"][name]); }
ArchConstraints decoder_cell(bool qk, bool bias) {
  ArchConstraints c;
  c.has_qk_norm = qk;
  c.has_bias = bias;
  return c;
}

TEST(Contracts, EveryKnownArchitectureHasAFile) {
  std::set<std::string> declared;
  for (const auto& f : families()) declared.insert(f.y["family"].as<std::string>());
  for (const auto& a : known_architectures()) EXPECT_TRUE(declared.count(a)) << a;
  EXPECT_EQ(declared.size(), known_architectures().size());
}

// FALSIFY-ARCH-001: the C++ derivation equals the YAML for every architecture and alias.
TEST(Contracts, Arch001_YamlEqualsCpp) {
  for (const auto& f : families()) {
    SCOPED_TRACE(f.file);
    const ArchConstraints want = parse_constraints(f.y["constraints"]);
    for (const auto& alias : f.y["aliases"].as<std::vector<std::string>>()) {
      SCOPED_TRACE(alias);
      const ArchConstraints c = from_architecture(alias);
      EXPECT_EQ(c, want);
      EXPECT_EQ(required_ops(c), parse_ops(f.y["required_ops"])) << required_ops(c).str();
      for (const auto& kv : f.y["required_roles"]) {
        const auto key = kv.first.as<std::string>();
        if (key == "model") {
          EXPECT_EQ(required_model_roles(c), roles_of(kv.second));
        } else {
          EXPECT_EQ(required_roles(c, parse_kind(key)), roles_of(kv.second)) << key;
        }
      }
      for (const auto& kv : f.y["optional_roles"])
        EXPECT_EQ(optional_roles(c, parse_kind(kv.first.as<std::string>())), roles_of(kv.second));
    }
    // The synthetic preset of the family implies the same constraints and ops.
    const ModelConfig cfg = synthetic_config(f.y["synthetic"].as<std::string>());
    EXPECT_EQ(constraints_of(cfg), want);
    EXPECT_EQ(required_ops(cfg), parse_ops(f.y["required_ops"]));
  }
}

// FALSIFY-ARCH-002: base roles in every decoder-layout architecture, the unknown one included.
TEST(Contracts, Arch002_BaseRolesAlwaysPresent) {
  const Roles base = group("base");
  ASSERT_EQ(base.size(), 9u);
  for (const auto& f : families()) {
    const ArchConstraints c = parse_constraints(f.y["constraints"]);
    if (c.layout == Layout::decoder) {
      EXPECT_TRUE(contains_all(required_roles(c), base)) << f.file;
    } else if (c.layout == Layout::hybrid_gdn) {
      EXPECT_TRUE(contains_all(required_roles(c, BlockKind::gated_attn), base)) << f.file;
    }
  }
  EXPECT_TRUE(contains_all(required_roles(from_architecture("future_arch_2027")), base));
}

// FALSIFY-ARCH-003: the four (qk_norm, bias) cells are distinct and non-empty.
TEST(Contracts, Arch003_ConstraintMatrixExhaustive) {
  std::set<Roles> cells;
  for (bool qk : {false, true})
    for (bool bias : {false, true}) {
      const Roles r = required_roles(decoder_cell(qk, bias));
      EXPECT_FALSE(r.empty());
      cells.insert(r);
    }
  EXPECT_EQ(cells.size(), 4u);
}

// FALSIFY-ARCH-004: |base| = 9, +qk 11, +bias 12, both 14 (and the YAML says so too).
TEST(Contracts, Arch004_RoleCounts) {
  const auto& card = requirements()["cardinalities"];
  EXPECT_EQ(required_roles(decoder_cell(false, false)).size(), card["base"].as<std::size_t>());
  EXPECT_EQ(required_roles(decoder_cell(true, false)).size(), card["qk_norm"].as<std::size_t>());
  EXPECT_EQ(required_roles(decoder_cell(false, true)).size(), card["bias"].as<std::size_t>());
  EXPECT_EQ(required_roles(decoder_cell(true, true)).size(), card["qk_norm_bias"].as<std::size_t>());
  EXPECT_EQ(card["base"].as<int>(), 9);
  EXPECT_EQ(card["qk_norm"].as<int>(), 11);
  EXPECT_EQ(card["bias"].as<int>(), 12);
  EXPECT_EQ(card["qk_norm_bias"].as<int>(), 14);
  EXPECT_EQ(group("base").size() + group("qk_norm").size() + group("bias").size(), 14u);
}

// FALSIFY-ARCH-005 / 006: Qwen3 needs QK-norm and no bias; Qwen2 the reverse.
TEST(Contracts, Arch005_Qwen3NeedsQkNormNotBias) {
  const Roles r = required_roles(from_architecture("qwen3"));
  EXPECT_TRUE(contains_all(r, group("qk_norm")));
  for (const auto& b : group("bias")) EXPECT_EQ(std::count(r.begin(), r.end(), b), 0) << b;
}

TEST(Contracts, Arch006_Qwen2NeedsBiasNotQkNorm) {
  const Roles r = required_roles(from_architecture("qwen2"));
  EXPECT_TRUE(contains_all(r, group("bias")));
  for (const auto& q : group("qk_norm")) EXPECT_EQ(std::count(r.begin(), r.end(), q), 0) << q;
}

// FALSIFY-ARCH-007: LLaMA and Mistral need exactly the base roles.
TEST(Contracts, Arch007_LlamaAndMistralBaseOnly) {
  for (const char* a : {"llama", "mistral"})
    EXPECT_EQ(required_roles(from_architecture(a)), group("base")) << a;
}

// FALSIFY-ARCH-008: removing any single required tensor is refused before any computation.
TEST(Contracts, Arch008_AnyMissingRequiredTensorIsRefused) {
  for (const char* preset : {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gpt2-tiny", "qwen35-tiny",
                             "qwen3next-tiny", "qwen3moe-tiny", "mixtral-tiny"}) {
    const Model full = make_synthetic(preset, 1);
    ASSERT_TRUE(check_completeness(full).empty()) << preset;
    const ArchConstraints c = constraints_of(full.config);
    std::vector<std::pair<int, std::string>> required;
    for (const auto& r : required_model_roles(c)) required.emplace_back(-1, r);
    for (int l = 0; l < full.config.n_layers; ++l)
      for (const auto& r : required_roles(c, full.config.block_kind(l))) required.emplace_back(l, r);
    for (const auto& [layer, role] : required) {
      Model m = full;
      const std::string name = role_tensor(layer, role);
      ASSERT_TRUE(m.weights.has(name)) << preset << ": " << name;
      m.weights.erase(name);
      const auto missing = check_completeness(m);
      ASSERT_EQ(missing.size(), 1u) << name;
      EXPECT_EQ(missing[0].tensor, name);
      EXPECT_EQ(missing[0].role, role);
      EXPECT_EQ(missing[0].layer, layer);
      EXPECT_THROW(Reference r(m), ModelError) << name;
    }
  }
}

// FALSIFY-ARCH-009: optional roles never reject.
TEST(Contracts, Arch009_OptionalRolesDoNotReject) {
  for (const char* preset :
       {"llama-tiny", "qwen3-tiny", "qwen35-tiny", "qwen3next-tiny", "qwen3moe-tiny", "mixtral-tiny"}) {
    Model m = make_synthetic(preset, 1);
    m.weights.erase("output.weight");  // tied fallback to token_embd
    for (int l = 0; l < m.config.n_layers; ++l)
      for (const auto& r : optional_roles(constraints_of(m.config), m.config.block_kind(l)))
        m.weights.erase(role_tensor(l, r));
    EXPECT_TRUE(check_completeness(m).empty()) << preset;
    EXPECT_NO_THROW(Reference r(m));
  }
}

// FALSIFY-ARCH-010: an unknown architecture falls back to base.
TEST(Contracts, Arch010_UnknownArchitectureFallsBackToBase) {
  const ArchConstraints c = from_architecture("future_arch_2027");
  EXPECT_FALSE(c.has_qk_norm);
  EXPECT_FALSE(c.has_bias);
  EXPECT_EQ(c, parse_constraints(requirements()["fallback"]));
  EXPECT_EQ(required_roles(c), group("base"));
  EXPECT_EQ(canonical_architecture("future_arch_2027"), "");
}

// FALSIFY-ARCH-011: aliases give identical constraints and roles.
TEST(Contracts, Arch011_AliasesAreEquivalent) {
  EXPECT_EQ(from_architecture("llama"), from_architecture("llama3"));
  EXPECT_EQ(from_architecture("llama"), from_architecture("mistral"));
  EXPECT_EQ(from_architecture("qwen2"), from_architecture("qwen2.5"));
  EXPECT_EQ(from_architecture("qwen2"), from_architecture("qwen"));
  // qwen3next was the dense hybrid's name here; it is Qwen3-Next's (the hybrid with experts) now.
  EXPECT_NE(from_architecture("qwen3next"), from_architecture("qwen35"));
  EXPECT_EQ(from_architecture("qwen3next"), from_architecture("qwen3_next"));
  for (const auto& f : families()) {
    const auto aliases = f.y["aliases"].as<std::vector<std::string>>();
    for (const auto& a : aliases) {
      EXPECT_EQ(from_architecture(a), from_architecture(aliases.front())) << a;
      EXPECT_EQ(required_roles(from_architecture(a)), required_roles(from_architecture(aliases.front())))
          << a;
    }
  }
}

// A MoE decoder layer swaps the dense MLP's three matrices for the router and the expert stacks,
// and requires its routing rule by name, so a dense-only kernel set is refused.
TEST(Contracts, MoeLayoutSwapsTheDenseMlpForExperts) {
  const Roles dense = required_roles(from_architecture("qwen3"));
  const Roles moe = required_roles(from_architecture("qwen3moe"));
  for (const char* r : {"ffn_gate", "ffn_up", "ffn_down"}) {
    EXPECT_EQ(std::count(moe.begin(), moe.end(), r), 0) << r;
    EXPECT_EQ(std::count(dense.begin(), dense.end(), r), 1) << r;
  }
  EXPECT_TRUE(contains_all(moe, {"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}));
  EXPECT_TRUE(required_ops(from_architecture("qwen3moe")).has(Op::MoeSoftmaxTopK));
  EXPECT_FALSE(required_ops(from_architecture("qwen3moe")).has(Op::MoeTopKSoftmax));
  EXPECT_TRUE(required_ops(from_architecture("mixtral")).has(Op::MoeTopKSoftmax));
  EXPECT_FALSE(required_ops(from_architecture("mixtral")).has(Op::MoeNormTopK));
  // Qwen3-MoE with norm_topk_prob false needs no renormalisation op.
  ModelConfig c = synthetic_config("qwen3moe-tiny");
  c.moe_norm_topk = false;
  EXPECT_FALSE(required_ops(c).has(Op::MoeNormTopK));
  EXPECT_TRUE(required_ops(c).has(Op::MoeSoftmaxTopK));
}

// FALSIFY-ARCH-012: turning features on only adds roles (and ops).
TEST(Contracts, Arch012_FeaturesOnlyAddRoles) {
  for (bool qk : {false, true})
    for (bool bias : {false, true})
      for (bool qk2 : {qk, true})
        for (bool bias2 : {bias, true}) {
          const ArchConstraints a = decoder_cell(qk, bias), b = decoder_cell(qk2, bias2);
          EXPECT_TRUE(contains_all(required_roles(b), required_roles(a)));
          EXPECT_TRUE(required_ops(b).contains(required_ops(a)));
        }
}

}  // namespace
}  // namespace ds::ref
