// The schedule that interleaves at memory operations (Config::interleave, src/interleave.h) on the
// checked flavour of the lost-update kernels (kernels/lost_update_kernels.cu): a `+=` that several
// threads of one block make without an atomic, on global or shared memory, loses updates under it
// and so is a race for the schedule rerun; atomics and a reduction with barriers compute the same
// bits under it as under the default schedule.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "hazard_kernels.h"
#include "lost_update_kernels.h"
#include "race_kernels.h"
#include "test_kernels.h"
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

const LostUpdateCase kLostUpdateCases[] = {
    {"global_plus_equals", LostUpdateKernel::global_plus_equals, true, kSum},
    {"static_shared_plus_equals", LostUpdateKernel::static_shared_plus_equals, true, kSum},
    {"dynamic_shared_plus_equals", LostUpdateKernel::dynamic_shared_plus_equals, true, kSum},
    {"global_atomic_add", LostUpdateKernel::global_atomic_add, false, kSum},
    {"static_shared_atomic_add", LostUpdateKernel::static_shared_atomic_add, false, kSum},
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

INSTANTIATE_TEST_SUITE_P(Table, Interleave, testing::ValuesIn(kLostUpdateCases),
                         [](const testing::TestParamInfo<LostUpdateCase>& i) {
                           return std::string(i.param.name);
                         });

// The race-free kernels of the other tables, in their checked flavour: warp-per-row GEMV and
// block-per-row RMSNorm through shared memory and shuffles, integer and exact float atomics across
// blocks, static shared memory per block, collectives on mixed paths, shared-memory exchanges
// ordered by barriers or __syncwarp. Each gives the default schedule's bits interleaved.
struct CleanCase {
  const char* name;
  std::function<std::vector<std::uint32_t>()> run;  // the output's bits
};
void PrintTo(const CleanCase& c, std::ostream* os) { *os << c.name; }

template <class T>
std::vector<std::uint32_t> bits_of(const std::vector<T>& v) {
  std::vector<std::uint32_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(&out[i], &v[i], sizeof(std::uint32_t));
  return out;
}

std::vector<std::uint32_t> floats_kernel(void (*launch)(const float*, float*), int n_out) {
  simt::DeviceBuffer<float> in(random_floats(64, 7)), out(std::vector<float>(n_out, 0.0f));
  launch(in.data(), out.data());
  return bits_of(out.to_host());
}

const CleanCase kClean[] = {
    {"gemv",
     [] {
       simt::DeviceBuffer<float> w(random_floats(64 * 96, 1)), x(random_floats(96, 2)), y(64);
       gemv(w.data(), x.data(), y.data(), 64, 96);
       return bits_of(y.to_host());
     }},
    {"rmsnorm",
     [] {
       simt::DeviceBuffer<float> x(random_floats(3 * 300, 3)), g(random_floats(300, 4)), y(3 * 300);
       rmsnorm(x.data(), g.data(), y.data(), 3, 300, 1e-5f);
       return bits_of(y.to_host());
     }},
    {"atomics_across_blocks",
     [] {
       simt::DeviceBuffer<int> icount(std::vector<int>{0});
       simt::DeviceBuffer<float> fsum(std::vector<float>{0.0f});
       simt::DeviceBuffer<unsigned> umax(std::vector<unsigned>{0}), umin(std::vector<unsigned>{~0u});
       atomics(icount.data(), fsum.data(), umax.data(), umin.data(), 4);
       return std::vector<std::uint32_t>{static_cast<std::uint32_t>(icount.to_host()[0]),
                                         bits_of(fsum.to_host())[0], umax.to_host()[0], umin.to_host()[0]};
     }},
    {"static_shared_per_block",
     [] {
       simt::DeviceBuffer<int> out(std::vector<int>(4, 0));
       static_shared_sum(out.data(), 4);
       return bits_of(out.to_host());
     }},
    {"mixed_fast_path",
     [] {
       simt::DeviceBuffer<int> out(std::vector<int>(4 * 64, 0));
       mixed_fast_path(out.data(), 4);
       return bits_of(out.to_host());
     }},
    {"reduce_ok",
     [] {
       return floats_kernel([](const float* i, float* o) { race_kernel(RaceKernel::reduce_ok, i, o); }, 64);
     }},
    {"warp_synchronous_ok",
     [] {
       return floats_kernel(
           [](const float* i, float* o) { race_kernel(RaceKernel::warp_synchronous_ok, i, o); }, 64);
     }},
    {"half_slots_ok",
     [] {
       return floats_kernel([](const float* i, float* o) { race_kernel(RaceKernel::half_slots_ok, i, o); },
                            64);
     }},
    {"static_shared_ok",
     [] {
       return floats_kernel(
           [](const float* i, float* o) { hazard_kernel(HazardKernel::static_shared_ok, i, o); }, 64);
     }},
    {"shared_tree_ok",
     [] {
       return floats_kernel(
           [](const float* i, float* o) { hazard_kernel(HazardKernel::shared_tree_ok, i, o); }, 64);
     }},
    {"read_of_own_output",
     [] {
       return floats_kernel([](const float* i, float* o) { hazard_kernel(HazardKernel::own_output, i, o); },
                            8);
     }},
    {"each_block_its_own_element",
     [] {
       return floats_kernel(
           [](const float* i, float* o) { cross_block_kernel(CrossBlockKernel::own_elements, i, o); }, 4);
     }},
};

class InterleaveClean : public testing::TestWithParam<CleanCase> {};

TEST_P(InterleaveClean, SameBitsAsTheDefaultSchedule) {
  const CleanCase& c = GetParam();
  const std::vector<std::uint32_t> plain = c.run();
  for (const simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      simt::ScopedConfig scoped(interleaved(seed, order));
      EXPECT_EQ(c.run(), plain) << "order " << static_cast<int>(order) << " seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, InterleaveClean, testing::ValuesIn(kClean),
                         [](const testing::TestParamInfo<CleanCase>& i) {
                           return std::string(i.param.name);
                         });

// Under the hazard checker and a schedule rerun both: the checker watches the first schedule (the
// hazard on the static __shared__ sum, with its line) and the interleaved rerun loses the update.
TEST(InterleaveWithChecker, CheckerAndScheduleRerunEachReport) {
  simt::Config cfg;
  cfg.racecheck = true;
  cfg.race_schedules = 1;
  RaceFindings findings;
  const std::vector<float> out = run(LostUpdateKernel::static_shared_plus_equals, cfg);
  EXPECT_EQ(out[0], kSum) << "the first schedule's output is the one kept";
  const std::string all = fmt::format("{}", fmt::join(findings.messages, "\n"));
  EXPECT_NE(all.find("hazard on static shared memory"), std::string::npos) << all;
  EXPECT_NE(all.find("output differs between schedules forward and forward+interleave:1"), std::string::npos)
      << all;
}

// With the hazard checker on, it takes every hooked access: no interleaving, the default's bits.
TEST(InterleaveWithChecker, CheckerRunsUninterleaved) {
  simt::Config cfg = interleaved(1);
  cfg.racecheck = true;
  RaceFindings findings;
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(inputs()), out_buf(std::vector<float>(kThreads, 0.0f));
  hazard_kernel(HazardKernel::shared_tree_ok, in.data(), out_buf.data());
  const std::vector<float> out = out_buf.to_host();
  EXPECT_EQ(out[0], kSum);
  EXPECT_TRUE(findings.messages.empty());
}

}  // namespace
}  // namespace simt_test
