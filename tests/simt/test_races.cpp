// Races as findings: the schedule rerun (Config::race_schedules) and the shared-memory hazard
// checker (Config::racecheck), over kernels with and without a race (kernels/race_kernels.cu).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "race_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

struct RaceCase {
  const char* name;
  RaceKernel kernel;
  bool schedules_differ;  // some other schedule gives another output
  const char* hazard;     // what the checker reports; null: nothing
  const char* first;      // markers of the two accesses' lines in race_kernels.cu
  const char* second;
};
void PrintTo(const RaceCase& c, std::ostream* os) { *os << c.name; }

const RaceCase kRaceCases[] = {
    {"reduce_ok", RaceKernel::reduce_ok, false, nullptr, nullptr, nullptr},
    {"reduce_no_barrier", RaceKernel::reduce_no_barrier, true, "RAW", "@reduce-write", "@reduce-read"},
    {"rotate_war", RaceKernel::rotate_war, true, "WAR", "@rotate-read", "@rotate-write"},
    // The race no schedule of the runtime exposes: only the checker sees it.
    {"aliased_slots", RaceKernel::aliased_slots, false, "WAW", "@aliased-write", "@aliased-write"},
    {"warp_synchronous_ok", RaceKernel::warp_synchronous_ok, false, nullptr, nullptr, nullptr},
    {"half_slots_ok", RaceKernel::half_slots_ok, false, nullptr, nullptr, nullptr},
    // A benign hazard alone fails nothing (BenignHazardIsANote below).
    {"warp_sums_benign", RaceKernel::warp_sums_benign, false, nullptr, nullptr, nullptr},
};

std::vector<float> run(RaceKernel k, const simt::Config& cfg) {
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(random_floats(64, 7)), out(64);
  race_kernel(k, in.data(), out.data());
  return out.to_host();
}

bool have_symbolizer() {
  return std::system(
             "command -v llvm-symbolizer > /dev/null 2>&1 || command -v addr2line > /dev/null 2>&1") == 0;
}

class Races : public testing::TestWithParam<RaceCase> {};

TEST_P(Races, ScheduleRerunReportsExactlyTheOrderDependentOutputs) {
  const RaceCase& c = GetParam();
  const std::vector<float> plain = run(c.kernel, {});
  RaceFindings findings;
  simt::Config cfg;
  cfg.race_schedules = 3;
  const std::vector<float> checked = run(c.kernel, cfg);
  EXPECT_TRUE(bitwise_equal(plain, checked)) << "the first schedule's output is the one kept";
  ASSERT_EQ(findings.messages.size(), c.schedules_differ ? 1u : 0u)
      << fmt::format("{}", findings.messages.size());
  if (!c.schedules_differ) return;
  const std::string& m = findings.messages[0];
  EXPECT_NE(m.find("output differs between schedules forward and "), std::string::npos) << m;
  EXPECT_NE(m.find("argument 1 (float*) element "), std::string::npos) << m;
}

TEST_P(Races, HazardCheckerNamesTheAccessesByFileAndLine) {
  const RaceCase& c = GetParam();
  if (const std::string why = simt::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
  const std::vector<float> plain = run(c.kernel, {});
  RaceFindings findings;
  simt::Config cfg;
  cfg.racecheck = true;
  const std::vector<float> checked = run(c.kernel, cfg);
  EXPECT_TRUE(bitwise_equal(plain, checked)) << "the checker does not change what the kernel computes";
  if (c.hazard == nullptr) {
    EXPECT_TRUE(findings.messages.empty()) << findings.messages.front();
    return;
  }
  ASSERT_EQ(findings.messages.size(), 1u);
  const std::string& m = findings.messages[0];
  EXPECT_NE(m.find(fmt::format("{} hazard on dynamic shared memory", c.hazard)), std::string::npos) << m;
  if (!have_symbolizer()) GTEST_SKIP() << "no llvm-symbolizer or addr2line: findings name module+offset";
  for (const char* marker : {c.first, c.second})
    EXPECT_NE(m.find(fmt::format("race_kernels.cu:{}", line_of("race_kernels.cu", marker))),
              std::string::npos)
        << marker << ": " << m;
}

// Every lane storing its warp's sum to one slot: the fault-based checker compares each store of a
// write-after-write with the bytes it overwrote, and one value stored twice is a benign hazard, a
// note of the launch (racecheck_note) instead of a race.
TEST(Races, BenignHazardIsANote) {
  if (const std::string why = simt::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
  (void)simt::take_uninit_reads();
  RaceFindings findings;
  simt::Config cfg;
  cfg.racecheck = true;
  (void)run(RaceKernel::warp_sums_benign, cfg);
  EXPECT_TRUE(findings.messages.empty()) << findings.messages.front();
  const std::vector<std::string> notes = simt::take_uninit_reads();
  ASSERT_EQ(notes.size(), 1u);
  const std::string& n = notes.front();
  EXPECT_TRUE(n.starts_with(simt::racecheck_note)) << n;
  EXPECT_NE(
      n.find("warp_sums_kernel: benign WAW hazard on dynamic shared memory byte 0: thread (0,0,0) wrote"),
      std::string::npos)
      << n;
  EXPECT_NE(n.find("then thread (1,0,0) wrote the same value at"), std::string::npos) << n;
  if (have_symbolizer()) {
    EXPECT_NE(n.find(fmt::format("race_kernels.cu:{}", line_of("race_kernels.cu", "@warp-sums-write"))),
              std::string::npos)
        << n;
  }
}

// Global memory between blocks (src/block_writes.h): a byte two blocks change is a race unless both
// changes were atomics; blocks writing their own elements are not.
struct CrossBlockCase {
  const char* name;
  CrossBlockKernel kernel;
  bool race;
};
void PrintTo(const CrossBlockCase& c, std::ostream* os) { *os << c.name; }

const CrossBlockCase kCrossBlockCases[] = {
    {"plus_equals_between_blocks", CrossBlockKernel::plus_equals, true},
    {"atomic_add_between_blocks", CrossBlockKernel::atomic_add, false},
    {"each_block_its_own_element", CrossBlockKernel::own_elements, false},
};

class CrossBlock : public testing::TestWithParam<CrossBlockCase> {};

TEST_P(CrossBlock, HazardCheckerFindsWritesOfTwoBlocksWithoutAnAtomic) {
  const CrossBlockCase& c = GetParam();
  if (const std::string why = simt::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
  RaceFindings findings;
  simt::Config cfg;
  cfg.racecheck = true;
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(std::vector<float>{1, 2, 3, 4}), out(std::vector<float>{0, 0, 0, 0});
  cross_block_kernel(c.kernel, in.data(), out.data());
  const std::vector<float> got = out.to_host();
  if (c.kernel != CrossBlockKernel::own_elements) {
    EXPECT_EQ(got[0], 10.0f) << "the blocks run one at a time";
  }
  if (!c.race) {
    EXPECT_TRUE(findings.messages.empty()) << findings.messages.front();
    return;
  }
  ASSERT_EQ(findings.messages.size(), 1u);
  const std::string& m = findings.messages[0];
  EXPECT_NE(m.find("WAW between blocks: blocks (0,0,0) and (1,0,0) both write element 0 of argument #1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("block_sum_kernel"), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Table, CrossBlock, testing::ValuesIn(kCrossBlockCases),
                         [](const testing::TestParamInfo<CrossBlockCase>& i) {
                           return std::string(i.param.name);
                         });

INSTANTIATE_TEST_SUITE_P(Table, Races, testing::ValuesIn(kRaceCases),
                         [](const testing::TestParamInfo<RaceCase>& i) { return std::string(i.param.name); });

// Every rerun starts from the launch's inputs: an in-place update is not applied K + 1 times.
TEST(RaceRerun, RestoresInputsBeforeEverySchedule) {
  RaceFindings findings;
  simt::Config cfg;
  cfg.race_schedules = 4;
  simt::ScopedConfig scoped(cfg);
  const std::vector<float> x0 = random_floats(100, 3);
  simt::DeviceBuffer<float> x(x0);
  add_one_in_place(x.data(), 100);
  const std::vector<float> x1 = x.to_host();
  for (std::size_t i = 0; i < x0.size(); ++i) ASSERT_EQ(x1[i], x0[i] + 1.0f) << i;
  EXPECT_TRUE(findings.messages.empty());
}

// Interleaving at memory operations needs a kernel built CHECKED (tests/simt/test_interleave.cpp):
// a plain kernel runs under Config::interleave as without it, and its schedule rerun has no
// interleaved schedule (aliased_slots, which only interleaving could expose, stays unseen).
TEST(RaceRerun, PlainKernelsIgnoreInterleaving) {
  for (const RaceCase& c : kRaceCases) {
    simt::Config cfg;
    cfg.interleave = true;
    cfg.seed = 1;
    EXPECT_TRUE(bitwise_equal(run(c.kernel, {}), run(c.kernel, cfg))) << c.name;
  }
  RaceFindings findings;
  simt::Config cfg;
  cfg.race_schedules = 1;
  (void)run(RaceKernel::aliased_slots, cfg);
  EXPECT_TRUE(findings.messages.empty()) << findings.messages.front();
}

// With no sink installed, a finding is the launch's error, naming the kernel.
TEST(RaceRerun, WithoutSinkARaceIsAKernelError) {
  simt::Config cfg;
  cfg.race_schedules = 1;
  try {
    run(RaceKernel::reduce_no_barrier, cfg);
    FAIL() << "no error for a racing kernel";
  } catch (const simt::KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace simt_test
