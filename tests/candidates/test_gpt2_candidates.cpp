// GPT-2 on the candidates: simt (the kernels of kernels/*.cu through SIMT) and cpu-f16 serve
// the synthetic preset and both fixture files (GGUF, and safetensors with Conv1D [in, out]
// weights) in isolated and chained mode, prefill and decode, with every catalog stage
// produced and within the default policy.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <set>
#include <string>

#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {
namespace {

struct Gpt2Case {
  std::string name;  // test name
  std::string model;
  std::string candidate;
  std::uint64_t seed;
};
void PrintTo(const Gpt2Case& c, std::ostream* os) { *os << c.name; }

std::string fixture(std::string_view file) {
  return fmt::format("{}/models/{}", DRIFTSCOPE_FIXTURES_DIR, file);
}

class Gpt2Parity : public testing::TestWithParam<Gpt2Case> {};

TEST_P(Gpt2Parity, EveryStagePresentAndWithinPolicyInBothModes) {
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

  // Every (step, layer, stage, mode) of the GPT-2 catalog, each exactly once, none missing.
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

INSTANTIATE_TEST_SUITE_P(
    Models, Gpt2Parity,
    testing::Values(Gpt2Case{"simt_synthetic_seed0", "synthetic:gpt2-tiny", "simt", 0},
                    Gpt2Case{"simt_synthetic_seed1", "synthetic:gpt2-tiny", "simt", 1},
                    Gpt2Case{"simt_synthetic_seed2", "synthetic:gpt2-tiny", "simt", 2},
                    Gpt2Case{"simt_gguf", fixture("gpt2-tiny.gguf"), "simt", 0},
                    Gpt2Case{"simt_safetensors", fixture("gpt2-tiny"), "simt", 0},
                    Gpt2Case{"cpu_f16_synthetic_seed0", "synthetic:gpt2-tiny", "cpu-f16", 0},
                    Gpt2Case{"cpu_f16_synthetic_seed1", "synthetic:gpt2-tiny", "cpu-f16", 1},
                    Gpt2Case{"cpu_f16_gguf", fixture("gpt2-tiny.gguf"), "cpu-f16", 0},
                    Gpt2Case{"cpu_f16_safetensors", fixture("gpt2-tiny"), "cpu-f16", 0}),
    [](const auto& info) { return info.param.name; });

// GPT-2 small's shapes (768 wide, 12 heads of 64, a 3072-wide MLP, 50257 tokens), one layer.
TEST(Gpt2Parity, SmallRealShapesOneLayerOnSimt) {
  RunOptions o;
  o.model = "synthetic:gpt2-small";
  o.candidate = "simt";
  o.layers = 1;
  o.prompt_tokens = 2;
  o.decode_steps = 1;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
}

// A decode past the learned position table is bad input, named, not an out-of-bounds read.
TEST(Gpt2Positions, DecodePastTheTableIsRefusedByName) {
  for (const char* cand : {"simt", "cpu-f16"}) {
    const Model model = load_model_spec("synthetic:gpt2-tiny", 0, 0);
    CandidatePtr c = make_candidate(cand);
    c->load(model.config, model.weights);
    const int n_pos = int(model.weights.get("position_embd.weight").dim(0));
    Tensor tok(DType::i32, {2});
    tok.set(0, 1);
    tok.set(1, 2);
    TensorMap in, out;
    in["tokens"] = tok;
    const KernelStep embed = c->plan(model.config, BlockKind::embed).at(0);
    const StepContext ctx{&model.config, 1, kModelLayer, n_pos - 1, 2};
    try {
      c->run(embed, ctx, in, out);
      ADD_FAILURE() << cand << " embedded position " << n_pos << " of a " << n_pos << "-row table";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("learned positions"), std::string::npos)
          << cand << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace ds
