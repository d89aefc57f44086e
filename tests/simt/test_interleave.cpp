// The schedule that interleaves at memory operations (Config::interleave, src/interleave.h) on the
// checked flavour of the lost-update kernels (kernels/lost_update_kernels.cu): a `+=` that several
// threads of one block make without an atomic, on global or shared memory, loses updates under it
// and so is a race for the schedule rerun; atomics and a reduction with barriers compute the same
// bits under it as under the default schedule.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "lost_update_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

constexpr int kThreads = 64;
constexpr float kSum = kThreads * (kThreads + 1) / 2;  // of in[t] = t + 1: exact in any order

struct LostUpdateCase {
  const char* name;
  LostUpdateKernel kernel;
  bool loses_updates;  // on a GPU, and so under some interleaving
  const char* line;    // its marker in lost_update_kernels.cu: the racing statement
};
void PrintTo(const LostUpdateCase& c, std::ostream* os) { *os << c.name; }

const LostUpdateCase kCases[] = {
    {"global_plus_equals", LostUpdateKernel::global_plus_equals, true, "@global-plus-equals"},
    {"static_shared_plus_equals", LostUpdateKernel::static_shared_plus_equals, true,
     "@static-shared-plus-equals"},
    {"dynamic_shared_plus_equals", LostUpdateKernel::dynamic_shared_plus_equals, true,
     "@dynamic-shared-plus-equals"},
    {"global_atomic_add", LostUpdateKernel::global_atomic_add, false, nullptr},
    {"static_shared_atomic_add", LostUpdateKernel::static_shared_atomic_add, false, nullptr},
    {"tree_sum", LostUpdateKernel::tree_sum, false, nullptr},
    {"warp_sums_atomic_add", LostUpdateKernel::warp_sums_atomic_add, false, nullptr},
    {"own_element_plus_equals", LostUpdateKernel::own_element_plus_equals, false, nullptr},
};

std::vector<float> inputs() {
  std::vector<float> in(kThreads);
  for (int t = 0; t < kThreads; ++t) in[t] = static_cast<float>(t + 1);
  return in;
}

std::vector<float> run(LostUpdateKernel k, const simt::Config& cfg) {
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(inputs()), out(std::vector<float>(kThreads, 0.0f));
  lost_update_kernel(k, in.data(), out.data());
  return out.to_host();
}

simt::Config interleaved(std::uint64_t seed, simt::Order order = simt::Order::forward) {
  simt::Config c;
  c.order = order;
  c.seed = seed;
  c.interleave = true;
  return c;
}

class Interleave : public testing::TestWithParam<LostUpdateCase> {};

// The default schedule runs each thread's `+=` whole: every kernel sums exactly.
TEST_P(Interleave, DefaultScheduleLosesNoUpdate) {
  const std::vector<float> out = run(GetParam().kernel, {});
  EXPECT_EQ(out[0], GetParam().kernel == LostUpdateKernel::own_element_plus_equals ? 1.0f : kSum);
}

// Under interleaving a racing `+=` loses updates (its sum is smaller), for every seed tried, and
// in either order; a race-free kernel gives the default schedule's bits.
TEST_P(Interleave, InterleavingLosesUpdatesExactlyWhereAGpuWould) {
  const LostUpdateCase& c = GetParam();
  const std::vector<float> plain = run(c.kernel, {});
  for (const simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<float> out = run(c.kernel, interleaved(seed, order));
      const std::string where = fmt::format("order {} seed {}", static_cast<int>(order), seed);
      if (c.loses_updates) {
        EXPECT_LT(out[0], plain[0]) << where;
        EXPECT_GT(out[0], 0.0f) << where;
      } else {
        EXPECT_TRUE(bitwise_equal(plain, out)) << where << ": " << out[0] << " vs " << plain[0];
      }
    }
  }
}

// A seed is one schedule: the same bits every time.
TEST_P(Interleave, SameSeedSameBits) {
  const std::vector<float> a = run(GetParam().kernel, interleaved(3));
  const std::vector<float> b = run(GetParam().kernel, interleaved(3));
  EXPECT_TRUE(bitwise_equal(a, b));
}

// The schedule rerun of a kernel with access hooks tries the interleaved schedule first: one rerun
// finds the lost update, names the schedules and the element, and keeps the first run's output.
TEST_P(Interleave, ScheduleRerunReportsTheLostUpdateAsARace) {
  const LostUpdateCase& c = GetParam();
  const std::vector<float> plain = run(c.kernel, {});
  RaceFindings findings;
  simt::Config cfg;
  cfg.race_schedules = 1;
  const std::vector<float> kept = run(c.kernel, cfg);
  EXPECT_TRUE(bitwise_equal(plain, kept)) << "the first schedule's output is the one kept";
  ASSERT_EQ(findings.messages.size(), c.loses_updates ? 1u : 0u)
      << (findings.messages.empty() ? std::string() : findings.messages[0]);
  if (!c.loses_updates) return;
  const std::string& m = findings.messages[0];
  RecordProperty("report", m);
  EXPECT_NE(m.find("output differs between schedules forward and forward+interleave:1: argument 1 (float*) "
                   "element 0: 2080 vs "),
            std::string::npos)
      << m;
}

INSTANTIATE_TEST_SUITE_P(Table, Interleave, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<LostUpdateCase>& i) {
                           return std::string(i.param.name);
                         });

// With the hazard checker on, it takes every hooked access: no interleaving, the default's bits.
TEST(InterleaveWithChecker, CheckerRunsUninterleaved) {
  simt::Config cfg = interleaved(1);
  cfg.racecheck = true;
  RaceFindings findings;
  const std::vector<float> out = run(LostUpdateKernel::tree_sum, cfg);
  EXPECT_EQ(out[0], kSum);
  EXPECT_TRUE(findings.messages.empty());
}

}  // namespace
}  // namespace simt_test
