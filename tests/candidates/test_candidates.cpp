// The simt / cuda / mutant:<name> candidates end to end through the runner.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstddef>
#include <cstring>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>

#include "gpu/cuda_kernels.h"
#include "gpu/mutants.h"
#include "kernels.h"
#include "launch_sinks.h"
#include "mutants/mutants.h"
#include "reference.h"
#include "stage_catalog.h"
#include "registry.h"
#include "runner.h"

namespace ds {
namespace gpu {
// Test lists show a mutant by its name, not by its bytes.
void PrintTo(const MutantInfo& m, std::ostream* os) { *os << m.name; }
}  // namespace gpu
namespace {

RunOptions options(std::string model, std::string candidate, std::uint64_t seed = 0) {
  RunOptions o;
  o.model = std::move(model);
  o.candidate = std::move(candidate);
  o.prompt_tokens = 4;
  o.seed = seed;
  o.isolate_process = false;
  return o;
}

// ---------------------------------------------------------------------------------------

struct ParityCase {
  std::string model;
  std::uint64_t seed;
};
void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.model << " seed " << c.seed; }
class SimtParity : public testing::TestWithParam<ParityCase> {};

// Prefill + 2 decode steps, default policy, isolated mode: no false alarm. Where the
// default policy also flags cpu-f16 (the plain f32/f16 implementation: qwen3-tiny seed 1,
// attn at step 1, identical values), the flag is the policy's (being reworked on the
// compare branch), and simt must then fail exactly where cpu-f16 does, nowhere earlier.
TEST_P(SimtParity, PassesPrefillAndDecode) {
  RunOptions o = options(GetParam().model, "simt", GetParam().seed);
  o.decode_steps = 2;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_GT(r.results.size(), 90u);
  o.candidate = "cpu-f16";
  const RunReport base = run_parity(o, Policy::dtype_defaults());
  if (base.exit_code == kExitParity) {
    EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  } else {
    ASSERT_TRUE(r.first_failure.has_value()) << "simt passes where cpu-f16 fails: " << base.verdict;
    EXPECT_EQ(r.first_failure->key, base.first_failure->key) << r.verdict << " vs cpu-f16: " << base.verdict;
  }
}
INSTANTIATE_TEST_SUITE_P(
    Models, SimtParity,
    testing::Values(ParityCase{"synthetic:llama-tiny", 0}, ParityCase{"synthetic:qwen2-tiny", 0},
                    ParityCase{"synthetic:qwen3-tiny", 0}, ParityCase{"synthetic:qwen2-bias-tiny", 0},
                    ParityCase{"synthetic:qwen2-tails-tiny", 0}, ParityCase{"synthetic:llama-tiny", 1},
                    ParityCase{"synthetic:qwen2-tiny", 1}, ParityCase{"synthetic:qwen3-tiny", 1},
                    ParityCase{"synthetic:qwen2-bias-tiny", 1}, ParityCase{"synthetic:qwen2-tails-tiny", 1},
                    ParityCase{"synthetic:llama-tiny", 2}, ParityCase{"synthetic:qwen2-tiny", 2},
                    ParityCase{"synthetic:qwen3-tiny", 2}, ParityCase{"synthetic:qwen2-bias-tiny", 2},
                    ParityCase{"synthetic:qwen2-tails-tiny", 2}),
    [](const auto& info) {
      std::string n = fmt::format("{}_seed{}", info.param.model.substr(10), info.param.seed);
      for (char& c : n)
        if (c == '-' || c == '.') c = '_';
      return n;
    });

// Real shapes (hidden 896 is not a multiple of 256, 14 heads over 2 KV heads), one layer.
TEST(SimtParity, Qwen25HalfBRealShapesOneLayer) {
  RunOptions o = options("synthetic:qwen2.5-0.5b", "simt");
  o.layers = 1;
  o.prompt_tokens = 2;
  o.decode_steps = 1;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
}

// ---------------------------------------------------------------------------------------

// simt serves every family, Qwen3-Next's fused GDN decode ops included; simt-gdn-plain is the
// same kernels declaring only the plain GDN ops, so the gate refuses it a fused --gdn-variant.
TEST(SimtCandidate, DeclaresEveryOpItsKernelsImplement) {
  const OpSet all{Op::RMSNorm,       Op::RMSNormPlusOne, Op::QkNorm,      Op::BiasAdd,
                  Op::RoPE,          Op::RoPENeox,       Op::RoPEPartial, Op::RoPEFreqFactors,
                  Op::GQA,           Op::SwiGLU,         Op::MHA,         Op::LayerNorm,
                  Op::GeluMlp,       Op::AbsolutePos,    Op::CausalMask,  Op::AttnOutputGate,
                  Op::GatedDeltaNet, Op::SsmConv};
  const OpSet fused{Op::GdnInplace, Op::GdnInplaceIds, Op::SsmConvUpdate, Op::SsmConvUpdateIds};
  const OpSet simt = make_candidate("simt")->capabilities(),
              plain = make_candidate("simt-gdn-plain")->capabilities();
  EXPECT_TRUE(simt.contains(all)) << all.minus(simt).str();
  EXPECT_TRUE(simt.contains(fused)) << fused.minus(simt).str();
  EXPECT_TRUE(plain.contains(all)) << all.minus(plain).str();
  EXPECT_TRUE(plain.intersect(fused).empty()) << plain.intersect(fused).str();
}

// Qwen3-Next: q_proj yields the query and the gate halves, the gate multiplies the attention
// output before o_proj; the GDN layer's projections, conv, recurrence and gated norm.
TEST(SimtCandidate, Qwen3NextStepsMapToCatalogStages) {
  const CandidatePtr c = make_candidate("simt");
  const ModelConfig cfg = load_config_spec("synthetic:qwen35-tiny", 0);
  std::map<std::string, KernelStep> steps;
  for (const auto& s : c->plan(cfg, BlockKind::gated_attn)) steps[s.name] = s;
  for (const auto& s : c->plan(cfg, BlockKind::gdn)) steps[s.name] = s;
  EXPECT_EQ(steps["q_proj"].outputs, (std::vector<std::string>{"q", "attn_gate", "k", "v"}));
  EXPECT_EQ(steps["attn_gate_mul"].outputs, (std::vector<std::string>{"attn_gated"}));
  EXPECT_EQ(steps["o_proj_add"].inputs, (std::vector<std::string>{"attn_gated", "x"}));
  EXPECT_EQ(steps["gdn_in_proj"].outputs, (std::vector<std::string>{"qkv_mixed", "z_gate", "beta", "g"}));
  EXPECT_EQ(steps["gdn"].outputs, (std::vector<std::string>{"gdn_out", "gdn_state"}));
  EXPECT_EQ(steps["out_proj_add"].outputs, (std::vector<std::string>{"out_proj", "residual_1"}));
}

TEST(SimtCandidate, FusedStepsMapToCatalogStages) {
  const CandidatePtr c = make_candidate("simt");
  ModelConfig cfg = load_config_spec("synthetic:qwen3-tiny", 0);
  std::map<std::string, std::vector<std::string>> outs;
  for (const auto& s : c->plan(cfg, BlockKind::decoder)) outs[s.name] = s.outputs;
  EXPECT_EQ(outs["fused_qkv"], (std::vector<std::string>{"q", "k", "v"}));
  EXPECT_EQ(outs["qk_norm"], (std::vector<std::string>{"q_norm", "k_norm"}));
  EXPECT_EQ(outs["rope"], (std::vector<std::string>{"q_rope", "k_rope"}));
  EXPECT_EQ(outs["o_proj_add"], (std::vector<std::string>{"attn_out", "residual_1"}));
  EXPECT_EQ(outs["down_add"], (std::vector<std::string>{"down", "residual_2"}));
}

// GPT-2: c_attn produces the fused qkv stage, attention reads it (and its cache) in place, and
// the two chain-add GEMVs produce the projection and the residual together.
TEST(SimtCandidate, Gpt2StepsMapToCatalogStages) {
  const CandidatePtr c = make_candidate("simt");
  ModelConfig cfg = load_config_spec("synthetic:gpt2-tiny", 0);
  std::map<std::string, KernelStep> steps;
  for (const auto& s : c->plan(cfg, BlockKind::gpt2)) steps[s.name] = s;
  EXPECT_EQ(steps["c_attn"].outputs, (std::vector<std::string>{"qkv"}));
  EXPECT_EQ(steps["attention_qkv"].inputs, (std::vector<std::string>{"qkv", "cache:qkv"}));
  EXPECT_EQ(steps["o_proj_add"].outputs, (std::vector<std::string>{"attn_out", "residual_1"}));
  EXPECT_EQ(steps["down_add"].inputs, (std::vector<std::string>{"gelu", "residual_1"}));
  EXPECT_EQ(steps["down_add"].outputs, (std::vector<std::string>{"proj", "residual_2"}));
  EXPECT_EQ(c->plan(cfg, BlockKind::head).at(0).name, "ln_f");
}

// ---------------------------------------------------------------------------------------

// The strict rule for 1-ULP effects (docs/mutants.md): bit-exact against the known-good
// simt kernels on identical inputs. The default policy cannot see a 1-ULP change (its
// rtol is about two f16 ULPs), and a ULP count against the reference cannot either: the
// isolated inputs are the reference's unrounded stages rounded to f16, so correct
// kernels are already a few ULPs off near zero. Both candidates here get the same f16
// inputs (the reference's stages, step 0), step by step; the result is the first catalog
// stage whose bytes differ, as (layer, stage).
std::optional<std::pair<int, std::string>> first_bit_difference(const std::string& spec,
                                                                const std::string& cand) {
  const Model model = load_model_spec(spec, 0, 0);
  const ModelConfig& cfg = model.config;
  ref::Reference reference(model);
  CandidatePtr good = make_candidate("simt"), bad = make_candidate(cand);
  good->load(cfg, model.weights);
  bad->load(cfg, model.weights);
  const std::vector<std::int32_t> tokens = {5, 17, 42, 99};
  Tensor tok(DType::i32, {4});
  for (int i = 0; i < 4; ++i) tok.set(i, tokens[std::size_t(i)]);
  Tensor x = reference.embed(tokens, 0).at("embed");
  for (int l = 0; l < cfg.n_layers; ++l) {
    const TensorMap rs = reference.layer(l, x, 0);
    TensorMap out_good, out_bad;
    const StepContext ctx{&cfg, 0, l, 0, 4};
    for (const KernelStep& step : good->plan(cfg, cfg.block_kind(l))) {
      TensorMap in;
      for (const std::string& name : step.inputs) {
        const std::string stage =
            name == "x" ? "" : name.substr(name.find(':') == std::string::npos ? 0 : name.find(':') + 1);
        in[name] = (name == "x" ? x : rs.at(stage)).to(DType::f16);
      }
      good->run(step, ctx, in, out_good);
      bad->run(step, ctx, in, out_bad);
    }
    for (std::string_view stage : stages_for(cfg, l)) {
      const Tensor& a = out_good.at(std::string(stage));
      const Tensor& b = out_bad.at(std::string(stage));
      if (a.nbytes() != b.nbytes() || std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0)
        return std::make_pair(l, std::string(stage));
    }
    x = rs.at("residual_2");
  }
  return std::nullopt;
}

class Mutant : public testing::TestWithParam<gpu::MutantInfo> {};

// "<file>.cu:" of the mutant's kernel source (generated from kernels/mutants/<file>.patch), as a race
// finding names its line.
std::string mutant_source_line(const gpu::MutantInfo& m) {
  std::string file(m.name);
  for (char& c : file)
    if (c == '-') c = '_';
  return file + ".cu:";
}

// Every mutant fails, first at the stage and layer its table row documents.
TEST_P(Mutant, IsCaughtFirstAtItsDocumentedStage) {
  const auto& m = GetParam();
  RunOptions o = options(std::string(m.model), fmt::format("mutant:{}", m.name));
  o.decode_steps = m.first_step;
  o.probe = std::string(m.probe);
  if (m.late_prompt > 0) {
    o.prompt_tokens = m.late_prompt;
    o.from_step = m.first_step;
    o.layers = 1;
  }
  if (m.race_by == "schedule") o.simt.race_check = 2;
  if (m.race_by == "hazard") {
    if (const std::string why = launch_sinks::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
    o.simt.racecheck = true;
    o.layers = m.first_layer + 1;  // two signals per shared-memory access: no layer more than needed
  }
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  if (!m.race_by.empty()) {
    // A race is reported as one, whatever its values under the first schedule.
    ASSERT_TRUE(r.first_failure.has_value()) << r.verdict;
    const std::string& note = r.first_failure->note;
    EXPECT_EQ(r.first_failure->status, Status::race) << note;
    EXPECT_NE(note.find(m.race_kernel), std::string::npos) << note;
    if (m.race_by == "schedule") {
      EXPECT_NE(note.find("element "), std::string::npos) << note;
    }
    if (m.race_by == "hazard") {
      EXPECT_NE(note.find(fmt::format("{} hazard on dynamic shared memory", m.race_hazard)),
                std::string::npos)
          << note;
      EXPECT_NE(note.find(mutant_source_line(m)), std::string::npos) << note;
    }
  }
  if (!m.probe.empty()) {  // the probe is what shows it: the seeded prompt passes
    RunOptions plain = o;
    plain.probe.clear();
    EXPECT_EQ(run_parity(plain, Policy::dtype_defaults()).exit_code, kExitParity)
        << m.name << " without the probe";
  }
  if (!m.hidden_on.empty()) {  // the widths are what shows it: tile-multiple widths pass
    RunOptions plain = o;
    plain.model = std::string(m.hidden_on);
    EXPECT_EQ(run_parity(plain, Policy::dtype_defaults()).exit_code, kExitParity)
        << m.name << " on " << m.hidden_on;
  }
  if (m.policy == "default") {
    EXPECT_EQ(r.exit_code, kExitFailure) << r.verdict;
    ASSERT_TRUE(r.first_failure.has_value()) << r.verdict;
    EXPECT_EQ(r.first_failure->key.stage, m.first_stage) << r.verdict;
    EXPECT_EQ(r.first_failure->key.layer, m.first_layer) << r.verdict;
    EXPECT_EQ(r.first_failure->key.step, m.first_step) << r.verdict;
    EXPECT_EQ(mode_name(r.first_failure->mode), m.mode);
  } else {
    // Below the default policy's resolution: documented as strict-only.
    EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
    const auto diff = first_bit_difference(std::string(m.model), fmt::format("mutant:{}", m.name));
    ASSERT_TRUE(diff.has_value());
    EXPECT_EQ(diff->first, m.first_layer);
    EXPECT_EQ(diff->second, m.first_stage);
    // The same check from the command line: --baseline simt under the strict policy.
    RunOptions b = options(std::string(m.model), fmt::format("mutant:{}", m.name));
    b.decode_steps = m.first_step;
    b.baseline = "simt";
    const RunReport s = run_parity(b, Policy::from_file(DRIFTSCOPE_FIXTURES_DIR "/policies/strict.yaml"));
    EXPECT_EQ(s.exit_code, kExitFailure) << s.verdict;
    ASSERT_TRUE(s.first_failure.has_value()) << s.verdict;
    EXPECT_EQ(s.first_failure->key.stage, m.first_stage) << s.verdict;
    EXPECT_EQ(s.first_failure->key.layer, m.first_layer) << s.verdict;
    EXPECT_EQ(s.first_failure->key.step, m.first_step) << s.verdict;
  }
}

// The race mutants the schedule rerun catches, under the hazard checker too: a named hazard at the
// kernel's file:line, at the same stage, layer and step.
TEST(RaceMutants, HazardCheckerAlsoNamesTheScheduleRaces) {
  if (const std::string why = launch_sinks::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
  for (const auto& m : gpu::mutants()) {
    if (m.race_by != "schedule") continue;
    RunOptions o = options(std::string(m.model), fmt::format("mutant:{}", m.name));
    o.simt.racecheck = true;
    o.layers = 1;
    const RunReport r = run_parity(o, Policy::dtype_defaults());
    ASSERT_TRUE(r.first_failure.has_value()) << m.name << ": " << r.verdict;
    const StageResult& f = *r.first_failure;
    EXPECT_EQ(f.status, Status::race) << m.name << ": " << f.note;
    EXPECT_EQ(f.key.stage, m.first_stage) << m.name;
    EXPECT_EQ(f.key.layer, m.first_layer) << m.name;
    EXPECT_EQ(f.key.step, m.first_step) << m.name;
    EXPECT_NE(f.note.find(fmt::format("{} hazard", m.race_hazard)), std::string::npos)
        << m.name << ": " << f.note;
    EXPECT_NE(f.note.find(mutant_source_line(m)), std::string::npos) << m.name << ": " << f.note;
  }
}

// No false alarm: the correct kernels give no race finding on any tiny preset, under K schedules
// and under the hazard checker.
struct CleanCase {
  const char* name;
  const char* model;
  const char* candidate;
};
void PrintTo(const CleanCase& c, std::ostream* os) { *os << c.name; }
class RaceCheck : public testing::TestWithParam<CleanCase> {};

TEST_P(RaceCheck, CorrectKernelsHaveNoRace) {
  RunOptions o = options(GetParam().model, GetParam().candidate);
  o.decode_steps = 1;
  o.layers = 1;  // every kernel runs in one layer; the checker costs two signals per shared access
  o.simt.race_check = 3;
  o.simt.racecheck = launch_sinks::racecheck_unsupported().empty();
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  for (const StageResult& s : r.results) EXPECT_NE(s.status, Status::race) << s.key.stage << ": " << s.note;
}

const CleanCase kCleanCases[] = {{"llama_tiny", "synthetic:llama-tiny", "simt"},
                                 {"qwen2_tiny", "synthetic:qwen2-tiny", "simt"},
                                 {"qwen3_tiny", "synthetic:qwen3-tiny", "simt"},
                                 {"gpt2_tiny", "synthetic:gpt2-tiny", "simt"},
                                 {"qwen3next_tiny", "synthetic:qwen35-tiny", "simt-gdn"}};
INSTANTIATE_TEST_SUITE_P(TinyPresets, RaceCheck, testing::ValuesIn(kCleanCases),
                         [](const testing::TestParamInfo<CleanCase>& i) {
                           return std::string(i.param.name);
                         });

// The strict rule has no false alarm: the simt kernels are deterministic.
TEST(StrictRule, CorrectKernelsAreBitExactWithThemselves) {
  EXPECT_FALSE(first_bit_difference("synthetic:qwen2-tiny", "simt").has_value());
  EXPECT_FALSE(first_bit_difference("synthetic:gpt2-tiny", "simt").has_value());
}

INSTANTIATE_TEST_SUITE_P(Table, Mutant, testing::ValuesIn(gpu::mutants().begin(), gpu::mutants().end()),
                         [](const auto& info) {
                           std::string n(info.param.name);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Every registered mutant has its own kernels/mutants/ source: a table that differs from the
// production one in at least one launch entry, while the production table is untouched, and a
// module driftscope loads it from. Every kernel mutant is registered, except the one the
// harness's single sequence cannot show.
TEST(MutantKernels, EachMutantHasItsOwnKernelSourceAndModuleAndEveryKernelMutantIsRegistered) {
  const dsk::KernelTable& prod = dsk_simt::table();
  std::set<std::string> registered;
  for (const auto& m : gpu::mutants()) registered.emplace(m.name);
  for (const auto& m : gpu::gdn_mutants()) registered.emplace(m.name);
  for (const std::string& name : registered) {
    const dsk::KernelTable* t = dsk_simt::mutant_table(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_NE(std::memcmp(&t->embedding, &prod.embedding,
                          sizeof(dsk::KernelTable) - offsetof(dsk::KernelTable, embedding)),
              0)
        << name << " runs the production kernels";
    std::string why;
    const dsk::KernelTable* loaded = gpu::mutant_kernels(name, why);
    EXPECT_NE(loaded, nullptr) << name << ": " << why;
    EXPECT_NE(loaded, t) << name << " came from driftscope itself, not its module";
  }
  std::set<std::string> kernel_only;
  for (const std::string& name : dsk_simt::mutant_names())
    if (!registered.contains(name)) kernel_only.insert(name);
  // gdn-inplace-race needs several sequences writing each other's slots (tests/gdn/test_gdn.cpp).
  EXPECT_EQ(kernel_only, (std::set<std::string>{"gdn-inplace-race"}));
  EXPECT_EQ(dsk_simt::mutant_table("no-such-mutant"), nullptr);
  std::string why;
  EXPECT_THROW(gpu::mutant_kernels("no-such-mutant", why), std::logic_error);
}

// ---------------------------------------------------------------------------------------

#if defined(DRIFTSCOPE_HAVE_CUDA_KERNELS)
bool have_cuda_device() {
  std::string why;
  const dsk::KernelTable* t = gpu::cuda_kernels(why);
  return t != nullptr && t->device_error().empty();
}

TEST(CudaCandidate, WithoutDeviceLoadFailsWithClearError) {
  if (have_cuda_device()) GTEST_SKIP() << "a CUDA device is present";
  try {
    run_parity(options("synthetic:qwen2-tiny", "cuda"), Policy::dtype_defaults());
    FAIL() << "the cuda candidate ran without a device";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device: "), std::string::npos) << e.what();
  }
}

TEST(CudaCandidate, CliExitsNonZeroNamingTheMissingDevice) {
  if (have_cuda_device()) GTEST_SKIP() << "a CUDA device is present";
  FILE* p = ::popen(DRIFTSCOPE_BIN " run --model synthetic:qwen2-tiny --candidate cuda 2>&1", "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), kExitUsage) << out;
  EXPECT_NE(out.find("no CUDA device"), std::string::npos) << out;
}

// On a machine with a GPU: the nvcc-built kernels pass like the simt ones (in-process:
// a CUDA context does not survive the harness's fork).
TEST(CudaCandidate, WithDevicePassesEveryTinyPresetItServes) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  for (const char* model : {"synthetic:llama-tiny", "synthetic:qwen2-tiny", "synthetic:qwen3-tiny",
                            "synthetic:gpt2-tiny", "synthetic:qwen3moe-tiny", "synthetic:mixtral-tiny"}) {
    RunOptions o = options(model, "cuda");
    o.decode_steps = 2;
    const RunReport r = run_parity(o, Policy::dtype_defaults());
    EXPECT_EQ(r.exit_code, kExitParity) << model << ": " << r.verdict;
  }
}
#endif

}  // namespace
}  // namespace ds
