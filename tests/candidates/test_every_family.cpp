// One simt candidate per backend, not per family: simt (the kernels of kernels/*.cu through
// SIMT) serves every tiny synthetic preset and every model file under fixtures/models (GGUF and
// safetensors, the Qwen3.5 hybrid and GPT-2 included; not the qwen35 GGUF, whose tiled value
// heads simt refuses by name), and cpu-f16 serves the hybrid and GPT-2 ones, in
// isolated and chained mode over a prefill of 8 tokens and 2 decode steps: exit 0 and every
// catalog stage of every (step, layer, mode) produced once, none `missing`. The real-shape
// presets run the same way by hand (`--layers 2`), too slow for this table on two cores.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gate.h"
#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"
#include "synthetic.h"

namespace ds {
namespace {

struct FamilyCase {
  std::string name;  // test name: candidate_source_model
  std::string model;
  std::string candidate;
  std::uint64_t seed = 0;
};
void PrintTo(const FamilyCase& c, std::ostream* os) { *os << c.name; }

std::string identifier(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Every tiny synthetic preset (the real-shape ones are over 1024 wide) and every model file.
std::vector<std::pair<std::string, std::string>> models() {  // (case stem, model spec)
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& p : ref::synthetic_presets())
    if (ref::synthetic_config(p).hidden <= 1024 && ref::synthetic_config(p).vocab <= 1024)
      out.push_back({"synthetic_" + p, "synthetic:" + p});
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(fmt::format("{}/models", DRIFTSCOPE_FIXTURES_DIR)))
    if (e.path().extension() == ".gguf" || std::filesystem::exists(e.path() / "config.json"))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    out.push_back({(f.extension() == ".gguf" ? "gguf_" : "safetensors_") + f.stem().string(), f.string()});
  return out;
}

std::vector<FamilyCase> cases() {
  std::vector<FamilyCase> out;
  for (const auto& [stem, spec] : models()) {
    const ModelConfig cfg = load_config_spec(spec, 0);
    // A qwen35 GGUF's tiled value heads are refused on simt by name (the test below): kernels/ has
    // no tiled GDN map. MoE models run on kernels/moe_route.cu and kernels/moe_experts.cu, a shared
    // expert (Qwen3-Next) on the latter and kernels/moe_shexp.cu.
    if (cfg.gdn_head_map != GdnHeadMap::tiled) out.push_back({identifier("simt_" + stem), spec, "simt"});
    const Family f = cfg.family;
    // cpu-f16 where its code is its own: the GDN layers, the shared expert and GPT-2's blocks.
    if (f == Family::qwen35 || f == Family::qwen3next || f == Family::gpt2)
      out.push_back({identifier("cpu_f16_" + stem), spec, "cpu-f16"});
  }
  // GPT-2 (llm.c's model) over more seeds: its learned positions and biases vary with them.
  for (std::uint64_t seed : {1, 2})
    out.push_back(
        {fmt::format("simt_synthetic_gpt2_tiny_seed{}", seed), "synthetic:gpt2-tiny", "simt", seed});
  out.push_back({"cpu_f16_synthetic_gpt2_tiny_seed1", "synthetic:gpt2-tiny", "cpu-f16", 1});
  return out;
}

class EveryFamily : public testing::TestWithParam<FamilyCase> {};

TEST_P(EveryFamily, EveryStagePresentAndWithinPolicyInBothModes) {
  const auto& p = GetParam();
  RunOptions o;
  o.model = p.model;
  o.candidate = p.candidate;
  o.seed = p.seed;
  o.modes = {Mode::isolated, Mode::chained};
  o.prompt_tokens = 8;
  o.decode_steps = 2;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;

  const ModelConfig cfg = load_config_spec(p.model, 0);
  std::set<std::tuple<int, int, std::string, Mode>> want, got;
  for (int step = 0; step <= o.decode_steps; ++step)
    for (Mode mode : o.modes)
      for (int layer = kModelLayer; layer < cfg.n_layers; ++layer)
        for (std::string_view stage : stages_for(cfg, layer))
          want.insert({step, layer, std::string(stage), mode});
  for (const StageResult& s : r.results) {
    EXPECT_NE(s.status, Status::missing)
        << s.key.stage << " of layer " << s.key.layer << " step " << s.key.step;
    EXPECT_TRUE(got.insert({s.key.step, s.key.layer, s.key.stage, s.mode}).second) << s.key.stage;
  }
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Models, EveryFamily, testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The names the Qwen3-Next candidates had before simt served every family still resolve.
TEST(EveryFamily, OldQwen3NextNamesAreAliasesOfTheOneCandidate) {
  EXPECT_EQ(make_candidate("simt-gdn")->name(), "simt");
  const auto aliases = list_candidate_aliases();
  ASSERT_FALSE(aliases.empty());
  for (const auto& a : aliases) {
    EXPECT_EQ(make_candidate(a.alias)->name(), a.target) << a.alias;
    for (const auto& e : list_candidates()) EXPECT_NE(e.name, a.alias) << "an alias is listed as a candidate";
  }
}

// A hybrid with the tiled GDN head map (Qwen3.5 GGUFs) needs GdnTiledHeads: kernels/gdn.cu has
// the grouped map only, so the gate refuses simt by name (exit 3) instead of passing it and
// stopping at load; cpu-f16 has both maps.
TEST(EveryFamilyGate, TiledGdnHeadsAreRefusedByNameOnSimt) {
  ModelConfig tiled = load_config_spec("synthetic:qwen35-tiny", 0);
  EXPECT_FALSE(capability_refusal(tiled, *make_candidate("simt")).has_value());
  tiled.gdn_head_map = GdnHeadMap::tiled;
  const auto refusal = capability_refusal(tiled, *make_candidate("simt"));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("GdnTiledHeads"), std::string::npos) << *refusal;
  EXPECT_FALSE(capability_refusal(tiled, *make_candidate("cpu-f16")).has_value());
}

// A mixture-of-experts model needs its routing rule (and the experts) by name: a dense-only
// candidate (cpu-f16-v1, a first kernel set) is refused before any weight is loaded, the rule
// named, and Qwen3-Next's shared expert named too. simt and cpu-f16 declare both rules and the
// shared expert and serve them all.
TEST(EveryFamilyGate, MoeModelsAreRefusedByNameOnDenseCandidates) {
  for (const char* preset :
       {"synthetic:qwen3moe-tiny", "synthetic:mixtral-tiny", "synthetic:qwen3next-tiny"}) {
    SCOPED_TRACE(preset);
    const ModelConfig cfg = load_config_spec(preset, 0);
    const auto refusal = capability_refusal(cfg, *make_candidate("cpu-f16-v1"));
    ASSERT_TRUE(refusal.has_value());
    EXPECT_NE(
        refusal->find(cfg.moe_routing == MoeRouting::softmax_topk ? "MoeSoftmaxTopK" : "MoeTopKSoftmax"),
        std::string::npos)
        << *refusal;
    if (cfg.shared_expert()) {
      EXPECT_NE(refusal->find("MoeSharedExpert"), std::string::npos) << *refusal;
    }
    EXPECT_FALSE(capability_refusal(cfg, *make_candidate("cpu-f16")).has_value());
    // simt's kernels serve every routing rule and Qwen3-Next's shared expert.
    const auto simt = capability_refusal(cfg, *make_candidate("simt"));
    EXPECT_FALSE(simt.has_value()) << *simt;
  }
}

// A kernel set with routed experts only (simt's ops without MoeSharedExpert) is refused on
// Qwen3-Next naming the shared expert and nothing it has, and serves a MoE model without one.
class RoutedExpertsOnly final : public Candidate {
 public:
  std::string name() const override { return "routed-experts-only"; }
  std::string description() const override { return "simt's ops without the shared expert"; }
  DType storage_dtype() const override { return DType::f16; }
  OpSet capabilities() const override {
    return make_candidate("simt")->capabilities().minus({Op::MoeSharedExpert});
  }
  std::vector<KernelStep> plan(const ModelConfig&, BlockKind) const override { return {}; }
  void load(const ModelConfig&, const WeightStore&) override {}
  void run(const KernelStep&, const StepContext&, const TensorMap&, TensorMap&) override {}
};

TEST(EveryFamilyGate, SharedExpertIsRefusedByNameWithoutItsOp) {
  const auto refusal =
      capability_refusal(load_config_spec("synthetic:qwen3next-tiny", 0), RoutedExpertsOnly{});
  ASSERT_TRUE(refusal.has_value());
  const std::string missing = refusal->substr(refusal->find("Missing:"));
  EXPECT_NE(missing.find("MoeSharedExpert"), std::string::npos) << *refusal;
  EXPECT_EQ(missing.substr(0, missing.find('\n')).find("MoeExperts"), std::string::npos) << *refusal;
  EXPECT_FALSE(
      capability_refusal(load_config_spec("synthetic:qwen3moe-tiny", 0), RoutedExpertsOnly{}).has_value());
}

// A candidate that declares MoE limits (Candidate::moe_limits: simt's routing kernel keeps a fixed
// top-k array) is refused by name for a model past them, before anything is loaded; one that
// declares none (cpu-f16) is not.
struct MoeLimitCase {
  const char* name;
  int top_k, experts;
  const char* refused_naming;  // nullptr: passes the gate
};
void PrintTo(const MoeLimitCase& c, std::ostream* os) { *os << c.name; }
class MoeLimitGate : public testing::TestWithParam<MoeLimitCase> {};

TEST_P(MoeLimitGate, RefusesPastTheDeclaredLimitsByName) {
  const MoeLimitCase& c = GetParam();
  ModelConfig cfg = load_config_spec("synthetic:qwen3moe-tiny", 0);
  cfg.n_experts = c.experts;
  cfg.n_experts_used = c.top_k;
  const GateAnswer simt = gate_candidate(cfg, *make_candidate("simt"), false);
  EXPECT_EQ(simt.pass, c.refused_naming == nullptr) << simt.refusal;
  if (c.refused_naming) {
    EXPECT_NE(simt.refusal.find(c.refused_naming), std::string::npos) << simt.refusal;
    EXPECT_NE(simt.refusal.find("REFUSED by the capability gate: simt"), std::string::npos) << simt.refusal;
  }
  EXPECT_TRUE(gate_candidate(cfg, *make_candidate("cpu-f16"), false).pass) << "cpu-f16 declares no limits";
}

INSTANTIATE_TEST_SUITE_P(
    EveryFamilyGate, MoeLimitGate,
    testing::Values(MoeLimitCase{"top_k_at_the_limit", 16, 64, nullptr},
                    MoeLimitCase{"top_k_past_the_limit", 17, 64, "top-17 routing, past the top-16"},
                    MoeLimitCase{"experts_past_the_limit", 4, 2048, "2048 experts, past the 1024"}),
    [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ds
