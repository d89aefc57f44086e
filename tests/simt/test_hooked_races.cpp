// The hazard checker on kernels built with access hooks (driftscope_add_simt_kernel(... CHECKED),
// src/access_shadow.h): every race the fault-based checker finds in race_kernels.cu, plus what it
// cannot see (static shared memory, global memory read by one block and written by another, reads
// of shared memory nothing wrote), each named with the file:line of both accesses. This binary
// links only the checked flavour of the test kernels.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "hazard_kernels.h"
#include "race_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

bool have_symbolizer() {
  return std::system(
             "command -v llvm-symbolizer > /dev/null 2>&1 || command -v addr2line > /dev/null 2>&1") == 0;
}

struct HookedCase {
  const char* name;
  std::function<void(const float*, float*)> run;
  int n_out;         // output floats
  const char* file;  // the kernel's file in tests/simt/kernels
  // What the race report must say (each a substring), and the markers of the lines it must name;
  // no text: the report must be empty.
  std::vector<const char*> texts;
  std::vector<const char*> markers;
  // The same for take_uninit_reads().
  const char* uninit = nullptr;
  const char* uninit_marker = nullptr;
};
void PrintTo(const HookedCase& c, std::ostream* os) { *os << c.name; }

auto race(RaceKernel k) {
  return [k](const float* in, float* out) { race_kernel(k, in, out); };
}
auto cross(CrossBlockKernel k) {
  return [k](const float* in, float* out) { cross_block_kernel(k, in, out); };
}
auto hazard(HazardKernel k) {
  return [k](const float* in, float* out) { hazard_kernel(k, in, out); };
}

const HookedCase kCases[] = {
    // The fault-based checker's table (test_races.cpp), found through the hooks.
    {"reduce_ok", race(RaceKernel::reduce_ok), 64, "race_kernels.cu", {}, {}},
    {"reduce_no_barrier",
     race(RaceKernel::reduce_no_barrier),
     64,
     "race_kernels.cu",
     {"RAW hazard on dynamic shared memory byte"},
     {"@reduce-write", "@reduce-read"},
     "uninit read of dynamic shared memory byte 4",
     "@reduce-read"},
    {"rotate_war",
     race(RaceKernel::rotate_war),
     64,
     "race_kernels.cu",
     {"WAR hazard on dynamic shared memory byte"},
     {"@rotate-read", "@rotate-write"}},
    {"aliased_slots",
     race(RaceKernel::aliased_slots),
     64,
     "race_kernels.cu",
     {"WAW hazard on dynamic shared memory byte 0"},
     {"@aliased-write"}},
    {"warp_synchronous_ok", race(RaceKernel::warp_synchronous_ok), 64, "race_kernels.cu", {}, {}},
    {"half_slots_ok", race(RaceKernel::half_slots_ok), 64, "race_kernels.cu", {}, {}},
    // Global memory between blocks, now with the lines of both accesses.
    {"plus_equals_between_blocks",
     cross(CrossBlockKernel::plus_equals),
     4,
     "race_kernels.cu",
     {"race between blocks on global memory element 0 of argument #1", "of block (0,0,0)", "of block (1,0,0)",
      "without an atomic between them"},
     {"@block-plus-equals"}},
    {"atomic_add_between_blocks", cross(CrossBlockKernel::atomic_add), 4, "race_kernels.cu", {}, {}},
    {"each_block_its_own_element", cross(CrossBlockKernel::own_elements), 4, "race_kernels.cu", {}, {}},
    // What only the hooks see.
    {"static_shared_ok", hazard(HazardKernel::static_shared_ok), 64, "hazard_kernels.cu", {}, {}},
    {"static_shared_no_barrier",
     hazard(HazardKernel::static_shared_no_barrier),
     64,
     "hazard_kernels.cu",
     {"RAW hazard on static shared memory byte"},
     {"@static-write", "@static-read"},
     "uninit read of static shared memory byte 4",
     "@static-read"},
    {"read_of_another_blocks_output",
     hazard(HazardKernel::neighbour_output),
     8,
     "hazard_kernels.cu",
     {"WAR race between blocks on global memory element 1 of argument #1: thread (0,0,0) of block (0,0,0) "
      "read",
      "RAW race between blocks on global memory element 0 of argument #1: thread (0,0,0) of block (0,0,0) "
      "wrote"},
     {"@neighbour-write", "@neighbour-read"}},
    {"read_of_own_output", hazard(HazardKernel::own_output), 8, "hazard_kernels.cu", {}, {}},
    {"uninit_dynamic_shared",
     hazard(HazardKernel::uninit_dynamic_shared),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of dynamic shared memory byte 128 no thread of the block wrote: thread (32,0,0)",
     "@uninit-dynamic-read"},
    {"uninit_static_shared",
     hazard(HazardKernel::uninit_static_shared),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of static shared memory byte 128 no thread of the block wrote: thread (32,0,0)",
     "@uninit-static-read"},
    // A read-modify-write whose store the instrumentation does not check, found at the barrier.
    {"shared_plus_equals",
     hazard(HazardKernel::shared_plus_equals),
     64,
     "hazard_kernels.cu",
     {"hazard on dynamic shared memory byte 0: thread (0,0,0) ", "then thread (32,0,0) "},
     {"@shared-plus-equals"}},
    {"shared_tree_ok", hazard(HazardKernel::shared_tree_ok), 64, "hazard_kernels.cu", {}, {}},
};

std::vector<float> run(const HookedCase& c, bool racecheck) {
  simt::Config cfg;
  cfg.racecheck = racecheck;
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(random_floats(64, 7)), out(std::vector<float>(c.n_out, 0.0f));
  c.run(in.data(), out.data());
  return out.to_host();
}

void expect_lines(const std::string& m, const char* file, const std::vector<const char*>& markers) {
  for (const char* marker : markers)
    EXPECT_NE(m.find(fmt::format("{}:{}", file, line_of(file, marker))), std::string::npos)
        << marker << ": " << m;
}

class HookedRaces : public testing::TestWithParam<HookedCase> {};

TEST_P(HookedRaces, NamesEachRaceWithTheLinesOfBothAccesses) {
  const HookedCase& c = GetParam();
  (void)simt::take_uninit_reads();
  const std::vector<float> plain = run(c, false);
  RaceFindings findings;
  const std::vector<float> checked = run(c, true);
  // A kernel that reads nothing unwritten computes the same with the checker on (one that does may
  // read what an earlier launch left in a static __shared__ array).
  if (c.uninit == nullptr) {
    EXPECT_TRUE(bitwise_equal(plain, checked)) << "the checker does not change what the kernel computes";
  }
  const std::vector<std::string> uninit = simt::take_uninit_reads();
  if (c.uninit == nullptr) {
    EXPECT_TRUE(uninit.empty()) << uninit.front();
  } else {
    ASSERT_FALSE(uninit.empty());
    RecordProperty("uninit", uninit[0]);
    EXPECT_NE(uninit[0].find(c.uninit), std::string::npos) << uninit[0];
    if (have_symbolizer()) expect_lines(uninit[0], c.file, {c.uninit_marker});
  }
  if (c.texts.empty()) {
    EXPECT_TRUE(findings.messages.empty()) << findings.messages.front();
    return;
  }
  ASSERT_EQ(findings.messages.size(), 1u) << "one report per launch";
  const std::string& m = findings.messages[0];
  RecordProperty("report", m);
  for (const char* text : c.texts) EXPECT_NE(m.find(text), std::string::npos) << text << "\n in: " << m;
  if (!have_symbolizer()) GTEST_SKIP() << "no llvm-symbolizer or addr2line: findings name module+offset";
  expect_lines(m, c.file, c.markers);
}

INSTANTIATE_TEST_SUITE_P(Table, HookedRaces, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<HookedCase>& i) {
                           return std::string(i.param.name);
                         });

// Without Config::racecheck the hooks return at once: nothing is recorded or reported.
TEST(HookedRaces, NothingIsReportedWithTheCheckerOff) {
  RaceFindings findings;
  (void)simt::take_uninit_reads();
  const std::vector<float> out = run(kCases[1], false);
  EXPECT_TRUE(findings.messages.empty());
  EXPECT_TRUE(simt::take_uninit_reads().empty());
}

// The schedule rerun works on the checked flavour as on the plain one (the hooked checker is off
// there): the order-dependent output of a missing barrier is still found.
TEST(HookedRaces, ScheduleRerunStillFindsOrderDependentOutputs) {
  RaceFindings findings;
  simt::Config cfg;
  cfg.race_schedules = 3;
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(random_floats(64, 7)), out(64);
  race_kernel(RaceKernel::reduce_no_barrier, in.data(), out.data());
  ASSERT_EQ(findings.messages.size(), 1u);
  EXPECT_NE(findings.messages[0].find("output differs between schedules forward and "), std::string::npos)
      << findings.messages[0];
}

// A checked kernel runs on one host thread whatever the configuration asks: its output does not
// depend on it.
TEST(HookedRaces, AnyHostThreadCountGivesTheSameBits) {
  std::vector<std::vector<float>> outs;
  for (unsigned host_threads : {1u, 3u, 0u}) {
    simt::Config cfg;
    cfg.host_threads = host_threads;
    simt::ScopedConfig scoped(cfg);
    simt::DeviceBuffer<float> in(random_floats(64, 7)), out(std::vector<float>(8, 0.0f));
    hazard_kernel(HazardKernel::own_output, in.data(), out.data());
    outs.push_back(out.to_host());
  }
  EXPECT_TRUE(bitwise_equal(outs[0], outs[1]));
  EXPECT_TRUE(bitwise_equal(outs[0], outs[2]));
}

}  // namespace
}  // namespace simt_test
