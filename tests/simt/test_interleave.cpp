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
constexpr float kSum = kThreads * (kThreads + 1) / 2;  // of in[t] = t + 1
constexpr float kBlocksSum = 1 + 2 + 3 + 4;            // of in[b] over the 4 blocks

struct LostUpdateCase {
  const char* name;
  LostUpdateKernel kernel;
  bool loses_updates;  // on a GPU, and so under some interleaving
  float sum;           // out[0] with no update lost (in[i] = i + 1: exact in any order)
};
void PrintTo(const LostUpdateCase& c, std::ostream* os) { *os << c.name; }

const LostUpdateCase kCases[] = {
    {"global_plus_equals", LostUpdateKernel::global_plus_equals, true, kSum},
    {"static_shared_plus_equals", LostUpdateKernel::static_shared_plus_equals, true, kSum},
    {"dynamic_shared_plus_equals", LostUpdateKernel::dynamic_shared_plus_equals, true, kSum},
    {"global_atomic_add", LostUpdateKernel::global_atomic_add, false, kSum},
    {"static_shared_atomic_add", LostUpdateKernel::static_shared_atomic_add, false, kSum},
    {"tree_sum", LostUpdateKernel::tree_sum, false, kSum},
    {"warp_sums_atomic_add", LostUpdateKernel::warp_sums_atomic_add, false, kSum},
    {"own_element_plus_equals", LostUpdateKernel::own_element_plus_equals, false, 1.0f},
    {"blocks_plus_equals", LostUpdateKernel::blocks_plus_equals, true, kBlocksSum},
    {"blocks_atomic_add", LostUpdateKernel::blocks_atomic_add, false, kBlocksSum},
    {"blocks_own_element", LostUpdateKernel::blocks_own_element, false, 1.0f},
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

// The default schedule runs each thread's `+=` whole, and blocks one after another: every kernel
// sums exactly.
TEST_P(Interleave, DefaultScheduleLosesNoUpdate) {
  const std::vector<float> out = run(GetParam().kernel, {});
  EXPECT_EQ(out[0], GetParam().sum);
}

// Under interleaving a racing `+=` loses updates (its sum is smaller): between threads of a block
// for every seed tried, in every order; between blocks (where a block is suspended only at a coin's
// choice) for some seed of every order. A race-free kernel gives the default schedule's bits.
TEST_P(Interleave, InterleavingLosesUpdatesExactlyWhereAGpuWould) {
  const LostUpdateCase& c = GetParam();
  const bool between_blocks = c.sum == kBlocksSum;
  const std::vector<float> plain = run(c.kernel, {});
  for (const simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    int lost = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<float> out = run(c.kernel, interleaved(seed, order));
      const std::string where = fmt::format("order {} seed {}", static_cast<int>(order), seed);
      if (c.loses_updates) {
        lost += out[0] < plain[0];
        if (!between_blocks) {
          EXPECT_LT(out[0], plain[0]) << where;
        }
        EXPECT_GT(out[0], 0.0f) << where;
      } else {
        EXPECT_TRUE(bitwise_equal(plain, out)) << where << ": " << out[0] << " vs " << plain[0];
      }
    }
    if (c.loses_updates) {
      EXPECT_GT(lost, 0) << "order " << static_cast<int>(order);
    }
  }
}

// A seed is one schedule: the same bits every time.
TEST_P(Interleave, SameSeedSameBits) {
  const std::vector<float> a = run(GetParam().kernel, interleaved(3));
  const std::vector<float> b = run(GetParam().kernel, interleaved(3));
  EXPECT_TRUE(bitwise_equal(a, b));
}

// The schedule rerun of a kernel with access hooks tries the interleaved schedule first (seeded
// after the launch's own seed): one rerun finds the lost update, names the schedules and the
// element, and keeps the first run's output. Between threads of a block under every seed tried;
// between blocks, where a block hands over to another only at a coin's choice, under most (more
// than half of the seeds tried).
TEST_P(Interleave, ScheduleRerunReportsTheLostUpdateAsARace) {
  const LostUpdateCase& c = GetParam();
  const std::vector<float> plain = run(c.kernel, {});
  std::size_t found = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    RaceFindings findings;
    simt::Config cfg;
    cfg.seed = seed;
    cfg.race_schedules = 1;
    const std::vector<float> kept = run(c.kernel, cfg);
    EXPECT_TRUE(bitwise_equal(plain, kept)) << "the first schedule's output is the one kept";
    ASSERT_LE(findings.messages.size(), c.loses_updates ? 1u : 0u) << findings.messages[0];
    if (findings.messages.empty()) continue;
    ++found;
    const std::string& m = findings.messages[0];
    RecordProperty(fmt::format("report_seed_{}", seed), m);
    EXPECT_NE(
        m.find(fmt::format("output differs between schedules forward and forward+interleave:{}: argument 1 "
                           "(float*) element 0: {} vs ",
                           seed + 1, c.sum)),
        std::string::npos)
        << m;
  }
  if (c.loses_updates) {
    EXPECT_GE(found, c.sum == kBlocksSum ? 5u : 8u);
  }
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
