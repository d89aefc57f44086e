// Kernels written for nvcc, with no Driftscope header (kernels/standard_cuda.cu), built unchanged
// through driftscope_add_simt_kernel()'s CUDA front end: each construct computes what it does on a
// GPU, and reports name the .cu's own lines.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "simt/simt.h"
#include "standard_cuda.h"
#include "test_support.h"

namespace simt_test {
namespace {

// Small integers: every sum below is exact in float, so results compare with ==.
std::vector<float> small_ints(std::size_t n, int modulo) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 7919u) % modulo) - modulo / 2);
  return v;
}

struct SumsCase {
  const char* name;
  int blocks, threads;
  unsigned host_threads;
};
void PrintTo(const SumsCase& c, std::ostream* os) { *os << c.name; }

class StandardCudaSums : public testing::TestWithParam<SumsCase> {};

// <<<>>> with dynamic shared memory, extern __shared__, tile shfl_down, cg::reduce(plus), float4
// __ldcs loads, __stcs stores, float and int atomicAdd, cudaMalloc/Memset/Memcpy/Free,
// cudaFuncSetAttribute, cudaGetLastError.
TEST_P(StandardCudaSums, EveryBlockSumAndTheAtomicTotal) {
  const SumsCase& c = GetParam();
  simt::Config cfg;
  cfg.host_threads = c.host_threads;
  simt::ScopedConfig scoped(cfg);
  const std::vector<float> x = small_ints(static_cast<std::size_t>(c.blocks) * c.threads * 4, 41);
  const std_cuda::BlockSums r = std_cuda::block_sums(x, c.blocks, c.threads);
  ASSERT_EQ(r.per_block.size(), static_cast<std::size_t>(c.blocks));
  float total = 0;
  for (int b = 0; b < c.blocks; ++b) {
    float want = 0;
    for (int i = 0; i < c.threads * 4; ++i) want += x[static_cast<std::size_t>(b) * c.threads * 4 + i];
    EXPECT_EQ(r.per_block[b], want) << "block " << b;
    total += want;
  }
  EXPECT_EQ(r.total, total);
  EXPECT_EQ(r.blocks_done, c.blocks);
  EXPECT_EQ(r.last_error, "no error");
}

const SumsCase kSums[] = {
    {"one_warp", 1, 32, 1},
    {"three_warps_five_blocks", 5, 96, 1},
    {"eight_warps_on_three_threads", 7, 256, 3},
};
INSTANTIATE_TEST_SUITE_P(Table, StandardCudaSums, testing::ValuesIn(kSums),
                         [](const testing::TestParamInfo<SumsCase>& i) { return std::string(i.param.name); });

class StandardCudaTiles : public testing::TestWithParam<int> {};

// Tiles of 8, 16 and 32 of a 64-thread block: cg::reduce with less and greater, shfl_xor, shfl,
// ballot, sync, thread_rank, meta_group_rank and size.
TEST_P(StandardCudaTiles, EveryTileOperationPerThread) {
  const int tile = GetParam();
  const std::vector<float> x = small_ints(64, 23);
  const std::vector<float> out = std_cuda::tile_ops(x, tile);
  for (int t = 0; t < 64; ++t) {
    const int first = t / tile * tile;
    const auto begin = x.begin() + first, end = begin + tile;
    unsigned odd = 0;
    for (int r = 0; r < tile; ++r) odd |= (static_cast<int>(x[first + r]) % 2 != 0 ? 1u : 0u) << r;
    const float want[8] = {*std::min_element(begin, end), *std::max_element(begin, end),
                           x[first + ((t % tile) ^ 1)],   x[first],
                           static_cast<float>(odd),       static_cast<float>(t % tile),
                           static_cast<float>(t / tile),  static_cast<float>(tile)};
    for (int k = 0; k < 8; ++k) EXPECT_EQ(out[8 * t + k], want[k]) << "thread " << t << " value " << k;
  }
}
INSTANTIATE_TEST_SUITE_P(Table, StandardCudaTiles, testing::Values(8, 16, 32),
                         [](const testing::TestParamInfo<int>& i) { return fmt::format("tile{}", i.param); });

// A kernel template launched with its T deduced from the arguments, over several lines, with a
// stream; __ldcg loads and __stcs stores.
TEST(StandardCuda, DeducedKernelTemplateLaunch) {
  const std::vector<float> x = small_ints(100, 17);
  const std::vector<float> y = std_cuda::scale_deduced(x, 0.5f);
  ASSERT_EQ(y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] * 0.5f) << i;
}

// half2 and bfloat16 pairs: __floats2half2_rn, make_half2, __hadd2, __hmul2, __low2float,
// __high2half, __half2float, __floats2bfloat162_rn, __high2float.
TEST(StandardCuda, HalfAndBfloat16Pairs) {
  const std::vector<float> x = small_ints(40, 15);
  const std::vector<float> out = std_cuda::half_pairs(x);
  ASSERT_EQ(out.size(), 60u);
  for (std::size_t p = 0; p < 20; ++p) {
    const float a = x[2 * p], b = x[2 * p + 1];
    EXPECT_EQ(out[3 * p], a + b) << p;
    EXPECT_EQ(out[3 * p + 1], b * a) << p;
    EXPECT_EQ(out[3 * p + 2], a + b) << p;
  }
}

// The planted off-by-one of a shared-memory tree (tid <= stride) is a hazard the checker names at
// standard_cuda.cu's own line: the rewrite kept the author's line numbers.
TEST(StandardCuda, HazardNamesTheLineOfTheUnmodifiedFile) {
  if (const std::string why = simt::racecheck_unsupported(); !why.empty()) GTEST_SKIP() << why;
  if (std::system("command -v llvm-symbolizer > /dev/null 2>&1 || command -v addr2line > /dev/null 2>&1") !=
      0)
    GTEST_SKIP() << "no llvm-symbolizer or addr2line: findings name module+offset";
  simt::Config cfg;
  cfg.racecheck = true;
  simt::ScopedConfig scoped(cfg);
  try {
    std_cuda::racy_tree(small_ints(64, 9), 64);
    FAIL() << "no hazard reported for the off-by-one";
  } catch (const simt::KernelError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("hazard on dynamic shared memory"), std::string::npos) << m;
    EXPECT_NE(m.find(fmt::format("standard_cuda.cu:{}", line_of("standard_cuda.cu", "tid <= stride"))),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace simt_test
