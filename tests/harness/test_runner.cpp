// End to end through the runner: reference, candidate, compare, trace, first failure.
#include <gtest/gtest.h>

#include <filesystem>

#include "runner.h"
#include "trace_reader.h"

namespace ds {
namespace {

RunOptions base(std::string candidate) {
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = std::move(candidate);
  o.prompt_tokens = 4;
  return o;
}

struct ModeCase {
  std::vector<Mode> modes;
  int decode_steps;
};
void PrintTo(const ModeCase& c, std::ostream* os) {
  for (Mode m : c.modes) *os << mode_name(m) << " ";
  *os << c.decode_steps << " decode steps";
}

class CorrectCandidate : public testing::TestWithParam<ModeCase> {};

TEST_P(CorrectCandidate, CpuF16PassesEveryStageOfBothLayers) {
  RunOptions o = base("cpu-f16");
  o.modes = GetParam().modes;
  o.decode_steps = GetParam().decode_steps;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  EXPECT_FALSE(r.first_failure.has_value());
  // 17 decoder stages less q_norm/k_norm (qwen2) per layer, 2 layers, + embed, final_norm, logits.
  const std::size_t per_step = (15 * 2 + 3) * o.modes.size();
  EXPECT_EQ(r.results.size(), per_step * std::size_t(o.decode_steps + 1));
}

INSTANTIATE_TEST_SUITE_P(Runner, CorrectCandidate,
                         testing::Values(ModeCase{{Mode::isolated}, 0}, ModeCase{{Mode::isolated}, 3}));

TEST(Runner, ChainAddMutantFailsFirstAtResidual1OfLayer0) {
  for (const auto& modes :
       {std::vector<Mode>{Mode::isolated}, std::vector<Mode>{Mode::isolated, Mode::chained}}) {
    RunOptions o = base("mutant:chain-add-idx");
    o.modes = modes;
    const RunReport r = run_parity(o, Policy::dtype_defaults());
    EXPECT_EQ(r.exit_code, kExitFailure);
    ASSERT_TRUE(r.first_failure.has_value());
    EXPECT_EQ(r.first_failure->key.stage, "residual_1");
    EXPECT_EQ(r.first_failure->key.layer, 0);
    EXPECT_EQ(r.first_failure->key.step, 0);
    // The SIMT kernel mutant (kernels/gemv.cu): block b of each token row updates element b
    // (correctly) instead of its own 8 rows, so elements 0..7 of a row are right and the first
    // mismatch comes after them; most of the rest lack the attention output.
    EXPECT_GT(r.first_failure->m.first_mismatch, 0);
    EXPECT_GE(r.first_failure->m.mismatches, 4 * 64 / 4);
  }
}

TEST(Runner, TraceHoldsEveryStageRowAndTensors) {
  RunOptions o = base("mutant:chain-add-idx");
  o.trace_path = (std::filesystem::temp_directory_path() / "ds_test_runner_trace.h5").string();
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  trace::TraceReader t(o.trace_path);
  ASSERT_EQ(t.rows().size(), r.results.size());
  EXPECT_EQ(t.run()["candidate"]["name"], "mutant:chain-add-idx");
  ASSERT_TRUE(t.result().has_value());
  EXPECT_EQ((*t.result())["first_failure"]["stage"], "residual_1");
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const auto& row = t.rows()[i];
    EXPECT_EQ(row.result.key, r.results[i].key);
    EXPECT_EQ(row.result.status, r.results[i].status);
    EXPECT_EQ(row.result.m.max_abs, r.results[i].m.max_abs);
    ASSERT_TRUE(t.has_tensors(row));
  }
  // The stored tensors reproduce the stored metrics.
  const auto& row = t.rows()[10];
  const Tensor ref = t.ref_tensor(row), cand = t.cand_tensor(row);
  double max_abs = 0;
  for (std::int64_t i = 0; i < ref.numel(); ++i)
    max_abs = std::max(max_abs, std::abs(ref.at(i) - cand.at(i)));
  EXPECT_EQ(max_abs, row.result.m.max_abs);
  std::filesystem::remove(o.trace_path);
}

TEST(Runner, BadInputIsAnInputError) {
  RunOptions o = base("cpu-f16");
  o.model = "synthetic:no-such-model";
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
  o = base("no-such-candidate");
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
  o = base("cpu-f16");
  o.prompt_tokens = 0;
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
}

}  // namespace
}  // namespace ds
