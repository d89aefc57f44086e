// The capability gate refuses before anything is loaded or computed (a kernel set missing an op the model
// needs).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "registry.h"
#include "runner.h"

namespace ds {
namespace {

struct GateCase {
  const char* model;
  const char* candidate;
  const char* missing;  // nullptr: may run
};

void PrintTo(const GateCase& c, std::ostream* os) { *os << c.model << " on " << c.candidate; }

class CapabilityGate : public testing::TestWithParam<GateCase> {};

TEST_P(CapabilityGate, RefusesBeforeAnyWeightOrStage) {
  const GateCase& c = GetParam();
  std::vector<std::string> events;
  RunOptions o;
  o.model = c.model;
  o.candidate = c.candidate;
  o.isolate_process = false;
  o.on_event = [&](std::string_view e) { events.emplace_back(e); };
  if (!c.missing) {
    EXPECT_EQ(run_parity(o, Policy::dtype_defaults()).exit_code, kExitParity);
    EXPECT_GT(std::count(events.begin(), events.end(), "candidate_step"), 0);
    return;
  }
  try {
    run_parity(o, Policy::dtype_defaults());
    FAIL() << "expected a refusal";
  } catch (const GateRefusal& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt::format("Missing:          [{}]", c.missing)), std::string::npos) << what;
    EXPECT_NE(what.find("Model requires:"), std::string::npos);
    EXPECT_NE(what.find("Backend supports:"), std::string::npos);
  }
  EXPECT_EQ(events, std::vector<std::string>{"gate"});  // no weights, no reference, no candidate step
}

INSTANTIATE_TEST_SUITE_P(Runner, CapabilityGate,
                         testing::Values(GateCase{"synthetic:qwen3-tiny", "cpu-f16-v1", "QkNorm"},
                                         GateCase{"synthetic:qwen2-tiny", "cpu-f16-v1", "BiasAdd"},
                                         GateCase{"synthetic:llama-tiny", "cpu-f16-v1", nullptr},
                                         GateCase{"synthetic:qwen3-tiny", "cpu-f16", nullptr}));

}  // namespace
}  // namespace ds
