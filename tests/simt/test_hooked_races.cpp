// The hazard checker on kernels built with access hooks (driftscope_add_simt_kernel(... CHECKED),
// src/access_shadow.h): every race the fault-based checker finds in race_kernels.cu, plus what it
// cannot see (static shared memory, global memory read by one block and written by another, reads
// of shared memory nothing wrote, and under a poison of global memory nothing wrote), each named
// with the file:line of both accesses. This binary links only the checked flavour of the test
// kernels.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
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

const HookedCase kHookedCases[] = {
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
    {"plain_read_of_another_blocks_atomic",
     hazard(HazardKernel::plain_read_of_atomic),
     2,
     "hazard_kernels.cu",
     {"RAW race between blocks on global memory element 0 of argument #1: thread (0,0,0) of block (0,0,0) "
      "atomically wrote"},
     {"@atomic-write", "@plain-read-of-atomic"}},
    {"uninit_dynamic_shared",
     hazard(HazardKernel::uninit_dynamic_shared),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of dynamic shared memory byte 128 no thread of the block wrote: thread (32,0,0)",
     "@uninit-dynamic-read"},
    {"reread_then_write",
     hazard(HazardKernel::reread_then_write),
     64,
     "hazard_kernels.cu",
     {"WAR hazard on dynamic shared memory byte 0: thread (1,0,0) read at ", "then thread (2,0,0) wrote at "},
     {"@reread", "@write-after-reread"}},
    {"uninit_after_another_blocks_write",
     hazard(HazardKernel::uninit_after_other_block),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of dynamic shared memory byte 0 no thread of the block wrote: thread (0,0,0)",
     "@uninit-other-block-read"},
    {"uninit_static_shared",
     hazard(HazardKernel::uninit_static_shared),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of static shared memory byte 128 no thread of the block wrote: thread (32,0,0)",
     "@uninit-static-read"},
    {"uninit_static_half",
     hazard(HazardKernel::uninit_static_half),
     64,
     "hazard_kernels.cu",
     {},
     {},
     "uninit read of static shared memory byte 64 no thread of the block wrote: thread (32,0,0)",
     "@uninit-half-read"},
    // A read-modify-write whose store the instrumentation does not check, found at the barrier.
    {"shared_plus_equals",
     hazard(HazardKernel::shared_plus_equals),
     64,
     "hazard_kernels.cu",
     {"hazard on dynamic shared memory byte 0: thread (0,0,0) ", "then thread (32,0,0) "},
     {"@shared-plus-equals", "@shared-plus-equals"}},
    {"shared_tree_ok", hazard(HazardKernel::shared_tree_ok), 64, "hazard_kernels.cu", {}, {}},
    // A write to an element many threads read in the phase, by a thread whose read the cell did
    // not record.
    {"late_reader_writes",
     hazard(HazardKernel::late_reader_writes),
     64,
     "hazard_kernels.cu",
     {"WAR hazard on dynamic shared memory byte 0: thread (0,0,0) read at ", "then thread (40,0,0) wrote at ",
      "RAW hazard on dynamic shared memory byte 0: thread (40,0,0) wrote at "},
     {"@broadcast-read", "@reader-write"}},
};

std::vector<float> run(const HookedCase& c, bool racecheck) {
  simt::Config cfg;
  cfg.racecheck = racecheck;
  simt::ScopedConfig scoped(cfg);
  simt::DeviceBuffer<float> in(random_floats(64, 7)), out(std::vector<float>(c.n_out, 0.0f));
  c.run(in.data(), out.data());
  return out.to_host();
}

// Each site is named by the kernel's own line, never by a header's line inlined into it.
// A marker listed twice names both accesses of one finding.
void expect_lines(const std::string& m, const char* file, const std::vector<const char*>& markers) {
  for (auto it = markers.begin(); it != markers.end(); ++it) {
    const char* marker = *it;
    const std::string site = fmt::format("{}:{}", file, line_of(file, marker));
    std::size_t at = m.find(site);
    for (auto earlier = markers.begin(); earlier != it && at != std::string::npos; ++earlier)
      if (std::string(*earlier) == marker) at = m.find(site, at + site.size());
    ASSERT_NE(at, std::string::npos) << marker << ": " << m;
    // The path the symbolizer prints, "at " before it, and no header frame before that.
    const std::size_t token = m.rfind(' ', at) + 1;
    EXPECT_EQ(m.substr(token - 3, 3), "at ") << marker << ": " << m;
    EXPECT_FALSE(m.substr(0, token).ends_with("inlined at ")) << marker << ": " << m;
  }
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

INSTANTIATE_TEST_SUITE_P(Table, HookedRaces, testing::ValuesIn(kHookedCases),
                         [](const testing::TestParamInfo<HookedCase>& i) {
                           return std::string(i.param.name);
                         });

// Under a poison (verify's runs) a read of global memory whose bytes still hold the poison
// simt::malloc filled them with, and that no store of the launch wrote, is an uninit read with its
// line; memory the host filled, or the kernel wrote first, is not.
struct GlobalReadCase {
  const char* name;
  GlobalReadKernel kernel;
  unsigned poison;       // Config::poison
  std::size_t uploaded;  // input floats the host filled (of 64)
  const char* uninit;    // what the first uninit read must say; null: none
  const char* marker;    // the line it must name
};
void PrintTo(const GlobalReadCase& c, std::ostream* os) { *os << c.name; }

const GlobalReadCase kGlobalReads[] = {
    {"input_never_written_nan_poison", GlobalReadKernel::read_input, simt::poison_nan, 0,
     "uninit read of global memory element 0 of argument #0, which still holds the poison the allocation was "
     "filled with (nothing wrote it): thread (0,0,0) read at ",
     "@global-input-read"},
    {"input_never_written_finite_poison", GlobalReadKernel::read_input, simt::poison_finite, 0,
     "uninit read of global memory element 0 of argument #0, which still holds the poison",
     "@global-input-read"},
    {"input_half_filled_by_host", GlobalReadKernel::read_input, simt::poison_nan, 32,
     "uninit read of global memory element 32 of argument #0, which still holds the poison the allocation "
     "was filled with (nothing wrote it): thread (32,0,0)",
     "@global-input-read"},
    {"input_filled_by_host", GlobalReadKernel::read_input, simt::poison_nan, 64, nullptr, nullptr},
    // Without a poison (check's hazard part) reads of global memory are not looked at.
    {"input_never_written_no_poison", GlobalReadKernel::read_input, 0, 0, nullptr, nullptr},
    {"scratch_read_after_the_launch_wrote_it", GlobalReadKernel::read_back_own_write, simt::poison_nan, 64,
     nullptr, nullptr},
    {"scratch_read_past_what_the_launch_wrote", GlobalReadKernel::read_back_half, simt::poison_nan, 64,
     "uninit read of global memory element 32 of argument #1, which still holds the poison the allocation "
     "was filled with (nothing wrote it): thread (32,0,0)",
     "@global-read-back"},
};

class GlobalUninitReads : public testing::TestWithParam<GlobalReadCase> {};

TEST_P(GlobalUninitReads, NamesReadsOfThePoisonWithTheirLine) {
  const GlobalReadCase& c = GetParam();
  (void)simt::take_uninit_reads();
  RaceFindings findings;
  {
    simt::Config cfg;
    cfg.racecheck = true;
    cfg.poison = c.poison;
    simt::ScopedConfig scoped(cfg);
    simt::DeviceBuffer<float> in(64), scratch(64), out(64);  // filled with the poison
    const std::vector<float> host = random_floats(64, 7);
    in.upload(host.data(), c.uploaded);
    global_read_kernel(c.kernel, in.data(), scratch.data(), out.data());
  }
  EXPECT_TRUE(findings.messages.empty()) << "no race in these kernels: " << findings.messages.front();
  const std::vector<std::string> uninit = simt::take_uninit_reads();
  if (c.uninit == nullptr) {
    EXPECT_TRUE(uninit.empty()) << uninit.front();
    return;
  }
  ASSERT_EQ(uninit.size(), 1u) << "one read site: " << fmt::format("{}", fmt::join(uninit, "\n"));
  RecordProperty("uninit", uninit[0]);
  EXPECT_NE(uninit[0].find(c.uninit), std::string::npos) << uninit[0];
  if (!have_symbolizer()) GTEST_SKIP() << "no llvm-symbolizer or addr2line: findings name module+offset";
  expect_lines(uninit[0], "hazard_kernels.cu", {c.marker});
}

INSTANTIATE_TEST_SUITE_P(Table, GlobalUninitReads, testing::ValuesIn(kGlobalReads),
                         [](const testing::TestParamInfo<GlobalReadCase>& i) {
                           return std::string(i.param.name);
                         });

// Without Config::racecheck the hooks return at once: nothing is recorded or reported.
TEST(HookedRaces, NothingIsReportedWithTheCheckerOff) {
  RaceFindings findings;
  (void)simt::take_uninit_reads();
  const std::vector<float> out = run(kHookedCases[1], false);
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
