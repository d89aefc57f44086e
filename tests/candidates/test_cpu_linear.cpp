// cpu-f16's linear runs tokens in vector lanes and outputs on threads; every output must keep the
// bits of the plain loop (acc += w[i] * x[i] in order, then the bias), whatever the shape.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <vector>

#include "cpu_ops.h"
#include "parallel.h"

namespace ds::cpu {
namespace {

struct LinearCase {
  const char* name;
  std::int64_t tokens, out, in;
  bool bias;
};
void PrintTo(const LinearCase& c, std::ostream* os) { *os << c.name; }

Mat filled(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  Mat m(rows, cols);
  for (auto& v : m.v) {
    seed = seed * 1664525u + 1013904223u;
    v = float(std::int32_t(seed >> 8) - (1 << 23)) / float(1 << 23);
  }
  return m;
}

class CpuLinear : public testing::TestWithParam<LinearCase> {};

TEST_P(CpuLinear, EqualsThePlainLoopBitForBit) {
  const LinearCase& c = GetParam();
  const Mat x = filled(c.tokens, c.in, 1), w = filled(c.out, c.in, 2), b = filled(1, c.out, 3);
  const std::span<const float> bias = c.bias ? std::span<const float>(b.v) : std::span<const float>();
  // The weight as a store holds it: f32 read in place, f16 and bf16 converted a row at a time.
  for (DType stored : {DType::f32, DType::f16, DType::bf16}) {
    Tensor wt(stored, {c.out, c.in});
    for (std::int64_t i = 0; i < wt.numel(); ++i) wt.set(i, double(w.v[std::size_t(i)]));
    const WeightMat weight(wt);
    // One thread, and three (more than this machine may have: the split, not the speed, is tested).
    for (int threads : {1, 3}) {
      set_worker_threads(threads);
      const Mat y = linear(x, weight, bias);
      set_worker_threads(0);
      ASSERT_EQ(y.rows, c.tokens);
      ASSERT_EQ(y.cols, c.out);
      for (std::int64_t r = 0; r < c.tokens; ++r)
        for (std::int64_t o = 0; o < c.out; ++o) {
          float acc = 0;
          for (std::int64_t i = 0; i < c.in; ++i) acc += float(wt.at(o * c.in + i)) * x.row(r)[i];
          const float want = acc + (c.bias ? b.v[std::size_t(o)] : 0.0f);
          ASSERT_EQ(std::memcmp(&want, &y.row(r)[o], sizeof want), 0)
              << dtype_name(stored) << ", " << threads << " threads, row " << r << " output " << o;
        }
    }
  }
}

// Below one tile of tokens, one tile, a tile and a remainder; products large enough to be split
// over threads (parallel_for splits above 2^20 multiply-adds).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuLinear,
                         testing::Values(LinearCase{"decode_token", 1, 300, 90, true},
                                         LinearCase{"below_a_tile", 31, 64, 64, false},
                                         LinearCase{"one_tile", 32, 17, 33, true},
                                         LinearCase{"tile_and_rest", 70, 45, 257, true},
                                         LinearCase{"threaded_prefill", 96, 1000, 128, true},
                                         LinearCase{"threaded_decode", 1, 40000, 128, false},
                                         LinearCase{"one_input", 40, 8, 1, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds::cpu
