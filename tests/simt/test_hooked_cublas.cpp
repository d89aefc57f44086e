// Memcheck's initcheck sees what a cuBLAS call writes: the CPU cuBLAS is host code of the checked
// module, whose stores mark the output written, so a kernel reading it after the GEMM (the bias
// add of a linear layer) is no uninitialised read.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "cublas_linear.h"
#include "simt/simt.h"

namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3);
  return v;
}

TEST(HookedCublas, MemcheckCountsACublasOutputAsWritten) {
  constexpr int T = 3, in = 16, out = 8;
  const std::vector<float> x = ramp(T * in, 0.25f), w = ramp(out * in, 0.5f), bias = ramp(out, 1.0f);
  std::vector<float> plain(T * out), checked(T * out);
  cublas_linear::linear_sgemm(plain.data(), x.data(), w.data(), bias.data(), T, in, out, false);
  simt::Config c;
  c.memcheck = true;
  simt::set_config(c);
  (void)simt::take_memory_findings();
  cublas_linear::linear_sgemm(checked.data(), x.data(), w.data(), bias.data(), T, in, out, false);
  simt::set_config(simt::Config{});
  const std::vector<std::string> found = simt::take_memory_findings();
  EXPECT_TRUE(found.empty()) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_EQ(checked, plain);
}

}  // namespace
