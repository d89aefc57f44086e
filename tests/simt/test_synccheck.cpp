// Synccheck and the hazard checker's severity on planted kernels built CHECKED, one .cu per case
// (tests/simt/kernels/synccheck): a barrier reached by part of a block, a warp collective whose mask
// names lanes that are not there or omits its caller, each a simt::KernelError naming the kernel,
// the kernel's own file:line, the block and the threads, with a clean twin that reports nothing; and
// a write-after-write of one value (every lane storing its warp's sum), benign alone, and listed
// after a real hazard beside it. This binary links only the checked flavour of those kernels.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "synccheck_cases.h"
#include "test_support.h"

namespace simt_test {
namespace {

struct SyncCase {
  const char* name;
  std::function<std::vector<float>()> run;
  // What the KernelError must say (each a substring); empty: the launch must succeed. Then what it
  // says under forward order, where the threads named depend on which arrives first.
  std::vector<const char*> texts;
  std::vector<const char*> forward_texts;
  const char* file = nullptr;  // in tests/simt/kernels: the kernel's file, whose marker lines it names
  std::vector<const char*> markers;
};
void PrintTo(const SyncCase& c, std::ostream* os) { *os << c.name; }

std::string site(const char* file, const char* marker) {
  const std::string path(file);
  return fmt::format("{}:{}", path.substr(path.rfind('/') + 1), line_of(file, marker));
}

const SyncCase kSyncCases[] = {
    {"barrier_after_half_the_block_returned",
     [] { return synccheck_cases::barrier_after_return(false); },
     {"synccheck_cases::rotate_kernel: ", "divergent __syncthreads: thread (",
      "32 of the block's 64 threads exited without reaching it", "[block (0,0,0)]"},
     {"thread (0,0,0) waits here", "(thread (32,0,0) first)"},
     "synccheck/barrier_after_return.cu",
     {"@sync:after-return"}},
    {"barrier_after_no_return", [] { return synccheck_cases::barrier_after_return(true); }, {}, {}},
    {"warps_at_two_barriers",
     [] { return synccheck_cases::two_barriers(false); },
     {"synccheck_cases::reverse_kernel: ", "divergent __syncthreads: thread (", "[block (0,0,0)]"},
     {"thread (0,0,0) waits at", "while thread (32,0,0) waits at"},
     "synccheck/two_barriers.cu",
     {"@sync:first-warp", "@sync:block-sync"}},
    {"warps_at_one_barrier", [] { return synccheck_cases::two_barriers(true); }, {}, {}},
    {"shuffle_mask_names_a_lane_past_the_block",
     [] { return synccheck_cases::shuffle_mask_past_block_end(false); },
     {"synccheck_cases::broadcast_kernel: ",
      "__shfl_sync mask 0xffffffff names lane 16 which does not exist (block has 48 threads)",
      "[block (0,0,0), thread ("},
     {"thread (32,0,0)]"},
     "synccheck/shuffle_masks.cu",
     {"@sync:past-end"}},
    {"shuffle_mask_of_the_lanes_there",
     [] { return synccheck_cases::shuffle_mask_past_block_end(true); },
     {},
     {}},
    {"shuffle_mask_names_an_exited_lane",
     [] { return synccheck_cases::shuffle_mask_exited_lane(false); },
     {"synccheck_cases::swap_pairs_kernel: ", "__shfl_xor_sync mask 0xffffffff names lane 0 which exited",
      "[block (0,0,0), thread ("},
     {"thread (1,0,0)]"},
     "synccheck/shuffle_masks.cu",
     {"@sync:exited-lane"}},
    {"shuffle_mask_names_inactive_lanes",
     [] { return synccheck_cases::shuffle_mask_inactive_lanes(false); },
     {"synccheck_cases::lower_half_broadcast_kernel: ", "deadlock: thread (",
      "waits at __shfl_sync (mask 0xffffffff)", "waits at __syncthreads", "[block (0,0,0)]"},
     {"thread (0,0,0) waits at __shfl_sync", "while thread (16,0,0) waits at __syncthreads"},
     "synccheck/shuffle_masks.cu",
     {"@sync:inactive-shfl", "@sync:inactive-barrier"}},
    {"shuffle_mask_of_the_active_lanes",
     [] { return synccheck_cases::shuffle_mask_inactive_lanes(true); },
     {},
     {}},
    {"shuffle_mask_no_lane_exited", [] { return synccheck_cases::shuffle_mask_exited_lane(true); }, {}, {}},
    {"syncwarp_mask_without_its_caller",
     [] { return synccheck_cases::syncwarp_mask_without_caller(false); },
     {"synccheck_cases::half_reverse_kernel: ", "__syncwarp called by lane ",
      "which is not in its mask 0x0000ffff", "[block (0,0,0), thread ("},
     {"lane 16 which", "thread (16,0,0)]"},
     "synccheck/syncwarp_mask.cu",
     {"@sync:not-in-mask"}},
    {"syncwarp_mask_of_each_half",
     [] { return synccheck_cases::syncwarp_mask_without_caller(true); },
     {},
     {}},
};

// Every schedule, in strict mode (a barrier after an exit is a finding): each planted case fails
// its launch with one message; each clean twin runs, bit-identical under every schedule.
class Synccheck : public ::testing::TestWithParam<SyncCase> {};

TEST_P(Synccheck, NamesKernelLineBlockAndThreads) {
  const SyncCase& c = GetParam();
  std::vector<float> first;
  for (const Schedule& s : all_schedules()) {
    simt::Config cfg = to_config(s);
    cfg.strict_barriers = true;
    simt::ScopedConfig scoped(cfg);
    if (c.texts.empty()) {
      std::vector<float> out;
      ASSERT_NO_THROW(out = c.run()) << s.name();
      if (first.empty()) first = out;
      EXPECT_TRUE(bitwise_equal(first, out)) << s.name();
      continue;
    }
    const std::string msg = error_of([&] { (void)c.run(); });
    RecordProperty("finding", msg);
    for (const char* t : c.texts)
      EXPECT_NE(msg.find(t), std::string::npos) << s.name() << ": missing `" << t << "` in: " << msg;
    if (s.order == simt::Order::forward) {
      for (const char* t : c.forward_texts)
        EXPECT_NE(msg.find(t), std::string::npos) << s.name() << ": missing `" << t << "` in: " << msg;
    }
    for (const char* m : c.markers)
      EXPECT_NE(msg.find(site(c.file, m)), std::string::npos)
          << s.name() << ": missing " << m << " in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Planted, Synccheck, ::testing::ValuesIn(kSyncCases),
                         [](const ::testing::TestParamInfo<SyncCase>& i) {
                           return std::string(i.param.name);
                         });

// NVIDIA's barrier is released once the threads that have not exited all wait at it: without
// strict mode the early return is no error, and the rotation is right.
TEST(Synccheck, BarrierAfterAnExitIsNoErrorWithoutStrictMode) {
  const std::vector<float> out = synccheck_cases::barrier_after_return(false);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], static_cast<float>((i + 1) % 32)) << i;
}

bool have_symbolizer() {
  return std::system(
             "command -v llvm-symbolizer > /dev/null 2>&1 || command -v addr2line > /dev/null 2>&1") == 0;
}

// The hazard checker's findings of one run of warp_sums, and the notes of its launch.
struct Checked {
  std::vector<float> out;
  std::vector<std::string> races;
  std::vector<std::string> notes;
};
Checked run_checked(bool barrier) {
  (void)simt::take_uninit_reads();
  simt::Config cfg;
  cfg.racecheck = true;
  simt::ScopedConfig scoped(cfg);
  RaceFindings findings;
  Checked c;
  c.out = synccheck_cases::warp_sums(barrier);
  c.races = findings.messages;
  c.notes = simt::take_uninit_reads();
  return c;
}

constexpr const char* kSumsFile = "synccheck/warp_sums.cu";

TEST(RacecheckSeverity, OneValueStoredByEveryLaneIsBenignAndNoFailure) {
  const Checked c = run_checked(true);
  EXPECT_TRUE(c.races.empty()) << fmt::format("{}", fmt::join(c.races, "\n"));
  float want = 0;
  for (int i = 0; i < 64; ++i) want += static_cast<float>(i % 7);
  EXPECT_EQ(c.out.at(0), want);
  ASSERT_EQ(c.notes.size(), 1u) << fmt::format("{}", fmt::join(c.notes, "\n"));
  const std::string& n = c.notes.front();
  RecordProperty("note", n);
  EXPECT_TRUE(n.starts_with(simt::racecheck_note)) << n;
  for (const char* t :
       {"block_sum_kernel: benign WAW hazard on static shared memory byte 0: thread (0,0,0) wrote",
        "then thread (1,0,0) wrote the same value", "[block (0,0,0)]"})
    EXPECT_NE(n.find(t), std::string::npos) << "missing `" << t << "` in: " << n;
  if (have_symbolizer()) {
    EXPECT_NE(n.find(site(kSumsFile, "@sync:warp-sum-store")), std::string::npos) << n;
  }
}

TEST(RacecheckSeverity, RealHazardComesFirstAndTheBenignOneAfterIt) {
  const Checked c = run_checked(false);
  ASSERT_EQ(c.races.size(), 1u) << "one report per launch";
  const std::string& m = c.races.front();
  RecordProperty("race", m);
  const std::size_t real =
      m.find("block_sum_kernel: RAW hazard on static shared memory byte 0: thread (31,0,0) wrote");
  const std::size_t benign = m.find("benign WAW hazard on static shared memory byte 0");
  ASSERT_NE(real, std::string::npos) << m;
  ASSERT_NE(benign, std::string::npos) << m;
  EXPECT_LT(real, benign) << m;
  EXPECT_NE(m.find("then thread (63,0,0) read"), std::string::npos) << m;
  if (have_symbolizer()) {
    EXPECT_NE(m.find(site(kSumsFile, "@sync:partials-read")), std::string::npos) << m;
    EXPECT_NE(m.find(site(kSumsFile, "@sync:warp-sum-store")), std::string::npos) << m;
  }
  // Said in the race report, not again among the launch's notes.
  EXPECT_TRUE(std::none_of(c.notes.begin(), c.notes.end(),
                           [](const std::string& n) { return n.starts_with(simt::racecheck_note); }));
}

}  // namespace
}  // namespace simt_test
