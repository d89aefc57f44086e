// The simt candidate under the hazard checker, or under a schedule rerun, runs the checked flavour
// of kernels/*.cu, dlopen'ed from its own module (candidates/gpu/checked_kernels.h): when it does,
// when it does not, and that the production kernels draw no hazard and no uninitialised read from
// it on any tiny preset, with verify's poison or without, and no race from the rerun that
// interleaves at memory operations.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/checked_kernels.h"
#include "gpu/gpu_candidate.h"
#include "launch_sinks.h"
#include "registry.h"
#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

// Whether the checked kernel module is here. False, and the caller skips, where the build (a
// sanitizer build) or the machine (no room for the access shadow) has none; a module that was
// built but does not load is a failure, not a skip (one marked STATIC_TLS once failed to dlopen).
bool has_checked_module() {
  std::string why;
  if (gpu::checked_kernels(why)) return true;
  const bool absent = why.find("built without the checked") != std::string::npos ||
                      why.find("cannot run here") != std::string::npos;
  if (!absent) ADD_FAILURE() << why;
  return false;
}

struct ChoiceCase {
  const char* name;
  const char* candidate;
  bool racecheck;
  unsigned race_schedules;
  bool checked;  // the kernels load() must choose
};
void PrintTo(const ChoiceCase& c, std::ostream* os) { *os << c.name; }

const ChoiceCase kChoices[] = {
    {"simt_under_the_hazard_checker", "simt", true, 0, true},
    {"simt_gdn_plain_under_the_hazard_checker", "simt-gdn-plain", true, 0, true},
    {"simt_without_it", "simt", false, 0, false},
    {"simt_under_a_schedule_rerun", "simt", false, 2, true},
    {"simt_under_the_checker_and_a_schedule_rerun", "simt", true, 2, true},
    {"a_mutant_keeps_its_plain_kernels", "mutant:reduce-war", true, 0, false},
};

class CheckedChoice : public testing::TestWithParam<ChoiceCase> {};

TEST_P(CheckedChoice, LoadChoosesTheFlavour) {
  if (!has_checked_module()) GTEST_SKIP() << "no checked kernel module in this build";
  const ChoiceCase& c = GetParam();
  const Model model = load_model_spec("synthetic:llama-tiny", 0, 1);
  SimtOptions o;
  o.racecheck = c.racecheck;
  o.race_check = c.race_schedules;
  const launch_sinks::ScopedOptions scoped(o);
  const CandidatePtr cand = make_candidate(c.candidate);
  cand->load(model.config, model.weights);
  const auto* gpu = dynamic_cast<const gpu::GpuCandidate*>(cand.get());
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->runs_checked_kernels(), c.checked);
}

INSTANTIATE_TEST_SUITE_P(Cases, CheckedChoice, testing::ValuesIn(kChoices),
                         [](const testing::TestParamInfo<ChoiceCase>& i) {
                           return std::string(i.param.name);
                         });

// Every tiny preset the simt candidate serves, run isolated under the checked kernels' hazard
// checker: no race, no read of shared memory nothing wrote, the same pass as a plain run. Under
// verify's NaN poison the checker also names reads of global memory that still hold the poison:
// the production kernels make none either (so verify's lines point only at what a bug read).
void expect_clean_under_the_checker(const std::string& preset, unsigned poison) {
  if (!has_checked_module()) GTEST_SKIP() << "no checked kernel module in this build";
  RunOptions o;
  o.model = "synthetic:" + preset;
  o.candidate = "simt";
  o.prompt_tokens = 4;
  o.decode_steps = 1;
  o.modes = {Mode::isolated};
  o.isolate_process = false;
  o.simt.racecheck = true;
  o.simt.poison = poison;
  RunReport r;
  try {
    r = run_parity(o, Policy::dtype_defaults());
  } catch (const GateRefusal& e) {
    GTEST_SKIP() << e.what();  // a family simt does not claim (Qwen3-Next's shared expert, for now)
  }
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  for (const StageResult& s : r.results) EXPECT_NE(s.status, Status::race) << s.key.stage << ": " << s.note;
  ASSERT_FALSE(r.launches.empty());
  for (const StepLaunch& l : r.launches)
    EXPECT_TRUE(l.launch.uninit.empty()) << l.kernel_step << ": " << l.launch.uninit.front();
}

class CheckedClean : public testing::TestWithParam<std::string> {};

TEST_P(CheckedClean, ProductionKernelsHaveNoHazardNorUninitRead) {
  expect_clean_under_the_checker(GetParam(), 0);
}

TEST_P(CheckedClean, ProductionKernelsReadNoPoisonedGlobalMemory) {
  expect_clean_under_the_checker(GetParam(), SimtOptions::kPoisonNan);
}

// The same presets under `--race-check 2` (its first rerun interleaves the checked kernels at
// memory operations, threads of a block and blocks alike): no race, the same pass as a plain run.
class InterleavedClean : public testing::TestWithParam<std::string> {};

TEST_P(InterleavedClean, ProductionKernelsGiveTheSameBitsInterleaved) {
  if (!has_checked_module()) GTEST_SKIP() << "no checked kernel module in this build";
  RunOptions o;
  o.model = "synthetic:" + GetParam();
  o.candidate = "simt";
  o.prompt_tokens = 4;
  o.decode_steps = 1;
  o.modes = {Mode::isolated};
  o.isolate_process = false;
  o.simt.race_check = 2;
  RunReport r;
  try {
    r = run_parity(o, Policy::dtype_defaults());
  } catch (const GateRefusal& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
  for (const StageResult& s : r.results) EXPECT_NE(s.status, Status::race) << s.key.stage << ": " << s.note;
}

std::vector<std::string> tiny_presets() {
  std::vector<std::string> out;
  for (const std::string& p : ref::synthetic_presets())
    if (p.size() > 5 && p.ends_with("-tiny")) out.push_back(p);
  return out;
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, CheckedClean, testing::ValuesIn(tiny_presets()),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });
INSTANTIATE_TEST_SUITE_P(TinyPresets, InterleavedClean, testing::ValuesIn(tiny_presets()),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ds
