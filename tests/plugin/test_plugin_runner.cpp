// Partial plugin candidates through the runner: refused without --fill before anything runs,
// judged with it (filled stages never judged), and a crash in the plugin is exit 4.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "registry.h"
#include "runner.h"

namespace ds {
namespace {

RunOptions options(const std::string& candidate, std::vector<std::string>* events) {
  RunOptions o;
  o.model = "synthetic:qwen2-tiny";
  o.candidate = candidate;
  o.modes = {Mode::isolated, Mode::chained};
  if (events) o.on_event = [events](std::string_view e) { events->emplace_back(e); };
  return o;
}

TEST(PluginRun, APartialPluginWithoutFillIsRefusedBeforeAnythingRuns) {
  std::vector<std::string> events;
  try {
    run_parity(options(std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm", &events), Policy::dtype_defaults());
    FAIL() << "expected the coverage gate to refuse";
  } catch (const GateRefusal& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("coverage gate: test-rmsnorm does not produce 17 stage(s)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("decoder blocks: q, k, v,"), std::string::npos) << what;
    EXPECT_NE(what.find("--fill reference"), std::string::npos) << what;
  }
  EXPECT_EQ(events, std::vector<std::string>{"gate"});  // no weights, no reference, no candidate step
}

TEST(PluginRun, WithFillOnlyTheCandidatesStagesAreJudged) {
  RunOptions o = options(std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm", nullptr);
  o.fill = true;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  const StageCounts n = count_stages(r.results);
  EXPECT_EQ(n.judged, 2u * 2u);  // attn_norm of 2 layers, 2 modes
  EXPECT_EQ(n.filled, r.results.size() - n.judged);
  for (const auto& s : r.results)
    EXPECT_EQ(s.status == Status::filled, s.key.stage != "attn_norm") << s.key.stage;
  EXPECT_NE(r.verdict.find("filled by the reference, not judged"), std::string::npos) << r.verdict;
}

TEST(PluginRun, ItsBatchAndMoeDeclarationsCrossTheProbe) {
  const CandidatePtr c = make_candidate(std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm");
  EXPECT_TRUE(c->batches(BlockKind::decoder));
  EXPECT_FALSE(c->batches(BlockKind::head));
  EXPECT_TRUE(c->batch_order_varies(BlockKind::decoder));
  EXPECT_FALSE(c->batch_order_varies(BlockKind::embed));
  EXPECT_EQ(c->moe_limits().max_top_k, 4);
  EXPECT_EQ(c->moe_limits().max_experts, 64);
}

TEST(PluginRun, ABatchedPluginWithABatchDependentOrderIsHeldWithinTheFloor) {
  RunOptions o = options(std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm", nullptr);
  o.fill = true;
  o.batch = "3";
  o.batch_prompts = "1,4,6";
  o.decode_steps = 1;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("test-rmsnorm declares a batch-dependent reduction order for decoder") != std::string::npos;
  })) << fmt::format("{}", fmt::join(r.notes, "\n"));
}

TEST(PluginRun, ABugInThePluginsKernelIsNamedAtItsStage) {
  RunOptions o = options(std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm-n1", nullptr);
  o.fill = true;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitFailure);
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.first_failure->key.stage, "attn_norm");
  EXPECT_EQ(r.first_failure->key.layer, 0);
}

TEST(PluginRun, ASegfaultInThePluginIsACrashWithTheStagesBeforeIt) {
  RunOptions o = options(DS_PLUGIN_SEGV, nullptr);
  o.fill = true;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitCrashed) << r.verdict;
  EXPECT_NE(r.verdict.find("signal 11"), std::string::npos) << r.verdict;
  const bool judged_layer0 = std::any_of(r.results.begin(), r.results.end(), [](const StageResult& s) {
    return s.key.layer == 0 && s.key.stage == "attn_norm" && s.status == Status::pass;
  });
  EXPECT_TRUE(judged_layer0);
}

TEST(PluginRun, APluginFileStandsForEveryCandidateItRegisters) {
  const auto specs = expand_candidate_spec(DS_PLUGIN_GOOD);
  EXPECT_EQ(specs, (std::vector<std::string>{std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm",
                                             std::string(DS_PLUGIN_GOOD) + ":test-rmsnorm-n1"}));
  EXPECT_THROW(make_candidate(DS_PLUGIN_GOOD), std::invalid_argument);  // which of the two?
}

}  // namespace
}  // namespace ds
