// A loop of shuffles folding one variable runs as one fused collective (the .cu rewrite step,
// kernels/simt/tools/shuffle_loop.h): every value it gives has the bits of the same shuffles written
// out one statement each, under every schedule; its misuses fail naming the loop's line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cuda_rewrite.h"
#include "fold_kernels.h"
#include "simt/simt.h"
#include "test_support.h"

namespace simt_test {
namespace {

struct FoldRow {
  const char* name;
  FoldCase fold;
};
void PrintTo(const FoldRow& r, std::ostream* os) { *os << r.name; }

const FoldRow kRows[] = {
    {"xor_sum", FoldCase::xor_sum},
    {"down_sum_upper_lanes_add_their_own", FoldCase::down_sum},
    {"up_max_with_fmaxf", FoldCase::up_max},
    {"xor_sum_at_width_16", FoldCase::xor_sum_width16},
    {"idx_with_a_source_per_lane", FoldCase::idx_rotate_sum},
    {"int_xor_down", FoldCase::int_xor_down},
    {"int_max", FoldCase::int_max},
    {"double_xor_sum", FoldCase::double_xor_sum},
    {"sixteen_byte_struct_xor_sum", FoldCase::pair_xor_sum},
};
static_assert(std::size(kRows) == kFoldCases, "every FoldCase has a row");

class FusedShuffleLoop : public testing::TestWithParam<FoldRow> {};

TEST_P(FusedShuffleLoop, GivesTheBitsOfTheShufflesWrittenOut) {
  const int blocks = 3, threads = 64;
  const std::size_t n = static_cast<std::size_t>(blocks) * threads;
  // Magnitudes from 2^-10 to 2^9: a sum's rounding depends on the order of its additions.
  std::vector<float> in = random_floats(n, 11);
  for (std::size_t i = 0; i < n; ++i) in[i] = std::ldexp(in[i], static_cast<int>(i % 20) - 10);
  for (const Schedule& sch : all_schedules()) {
    SCOPED_TRACE(sch.name());
    simt::ScopedConfig scoped(to_config(sch));
    simt::DeviceBuffer<float> din(in);
    simt::DeviceBuffer<double> fused(n), unrolled(n);
    fold_vs_unrolled(GetParam().fold, din.data(), fused.data(), unrolled.data(), blocks, threads);
    const std::vector<double> f = fused.to_host();
    const std::vector<double> u = unrolled.to_host();
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(&f[i], &u[i], sizeof(double)), 0)
          << "thread " << i << ": " << f[i] << " vs " << u[i];
  }
}

// The table above compares the fused loops with the written-out shuffles; the loop as written stays
// behind each fused call as its fallback, and would give the same bits. So: the rewrite step must
// have fused every loop of the file (each `for` in it folds a shuffle), else the table proves
// nothing about the fused path.
TEST(FusedShuffleLoopSource, EveryLoopOfTheTestKernelsIsFused) {
  const std::string path = std::string(SIMT_TEST_KERNEL_DIR) + "/fold_kernels.cu";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string out =
      simt::rewrite::rewrite_cuda_source({source, path, [](const std::string&) { return false; }, false});
  const std::size_t loops = count(source, "for (");
  ASSERT_GE(loops, std::size(kRows));
  EXPECT_EQ(count(out, "::simt::detail::shfl_fold<"), loops);
}

INSTANTIATE_TEST_SUITE_P(Table, FusedShuffleLoop, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<FoldRow>& i) { return std::string(i.param.name); });

struct MisuseRow {
  const char* name;
  void (*run)(double*);
  const char* marker;
  const char* says;
};
void PrintTo(const MisuseRow& r, std::ostream* os) { *os << r.name; }

const MisuseRow kMisuses[] = {
    {"mask_names_an_exited_lane", fold_after_a_lane_exited, "@fold-exited", "names lane 31 which exited"},
    {"lanes_run_different_step_counts", fold_with_steps_per_lane, "@fold-steps",
     "ran different shuffle loops"},
};

class FusedShuffleLoopMisuse : public testing::TestWithParam<MisuseRow> {};

TEST_P(FusedShuffleLoopMisuse, FailsNamingTheLoopsLine) {
  const MisuseRow& r = GetParam();
  simt::DeviceBuffer<double> out(32);
  const std::string error = error_of([&] { r.run(out.data()); });
  const std::string where = "fold_kernels.cu:" + std::to_string(line_of("fold_kernels.cu", r.marker));
  EXPECT_NE(error.find(where), std::string::npos) << error;
  EXPECT_NE(error.find(r.says), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Table, FusedShuffleLoopMisuse, testing::ValuesIn(kMisuses),
                         [](const testing::TestParamInfo<MisuseRow>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace simt_test
