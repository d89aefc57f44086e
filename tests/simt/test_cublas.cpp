// cuBLAS on the CPU (simt/cublas_host.h) through a kernel file that calls it as repositories do
// (kernels/cublas_linear.cu), held to the reference's linear layer (ds::ref::linear, f64).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cublas_linear.h"
#include "ops.h"
#include "tensor.h"

namespace {

constexpr int kT = 5, kIn = 67, kOut = 23;

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

ds::Tensor tensor(const std::vector<float>& v, ds::Shape shape) {
  return ds::Tensor::from_f64(std::move(shape), std::vector<double>(v.begin(), v.end()));
}

// The reference's linear layer of x [T, in] and w [out, in] (+ bias), f64.
std::vector<double> reference_linear(const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>* bias, int T) {
  const ds::Tensor b = bias ? tensor(*bias, {kOut}) : ds::Tensor{};
  const ds::Tensor y = ds::ref::linear(tensor(x, {T, kIn}), tensor(w, {kOut, kIn}), bias ? &b : nullptr);
  std::vector<double> out(std::size_t(y.numel()));
  for (std::int64_t i = 0; i < y.numel(); ++i) out[std::size_t(i)] = y.at(i);
  return out;
}

// Each output within `ulps` f32 roundings of the sum of |terms| (an f32 sum of `in` products).
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(CpuCublas, SgemmAndTheFilesBiasKernelMatchTheReferenceLinear) {
  const auto x = random_values(kT * kIn, 1), w = random_values(kOut * kIn, 2), bias = random_values(kOut, 3);
  std::vector<float> y(kT * kOut);
  cublas_linear::linear_sgemm(y.data(), x.data(), w.data(), bias.data(), kT, kIn, kOut, false);
  expect_close(y, reference_linear(x, w, &bias, kT), kIn * 0x1p-24 * 2);
}

TEST(CpuCublas, Tf32MathRoundsTheInputsTo10MantissaBits) {
  const auto x = random_values(kT * kIn, 4), w = random_values(kOut * kIn, 5), bias = random_values(kOut, 6);
  std::vector<float> y(kT * kOut);
  cublas_linear::linear_sgemm(y.data(), x.data(), w.data(), bias.data(), kT, kIn, kOut, true);
  const std::vector<double> exact = reference_linear(x, w, &bias, kT);
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) worst = std::fmax(worst, std::fabs(y[i] - exact[i]));
  // TF32 keeps 10 of f32's 23 mantissa bits: off by far more than f32 rounding, within TF32's.
  EXPECT_GT(worst, kIn * 0x1p-24 * 4);
  EXPECT_LT(worst, kIn * 0x1p-11 * 2);
}

TEST(CpuCublas, GemmExWithF16InputsMatchesTheReferenceOnTheRoundedInputs) {
  auto x = random_values(kT * kIn, 7), w = random_values(kOut * kIn, 8);
  std::vector<float> y(kT * kOut);
  cublas_linear::linear_gemm_ex_f16(y.data(), x.data(), w.data(), kT, kIn, kOut);
  const ds::Tensor xh = tensor(x, {kT, kIn}).to(ds::DType::f16),
                   wh = tensor(w, {kOut, kIn}).to(ds::DType::f16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(xh.at(std::int64_t(i)));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(wh.at(std::int64_t(i)));
  expect_close(y, reference_linear(x, w, nullptr, kT), kIn * 0x1p-24 * 2);
}

TEST(CpuCublas, StridedBatchedComputesEachBatchApart) {
  const auto x = random_values(2 * kT * kIn, 9), w = random_values(2 * kOut * kIn, 10);
  std::vector<float> y(2 * kT * kOut);
  cublas_linear::linear_batched(y.data(), x.data(), w.data(), kT, kIn, kOut);
  for (int b = 0; b < 2; ++b) {
    const std::vector<float> xb(x.begin() + b * kT * kIn, x.begin() + (b + 1) * kT * kIn);
    const std::vector<float> wb(w.begin() + b * kOut * kIn, w.begin() + (b + 1) * kOut * kIn);
    const std::vector<float> yb(y.begin() + b * kT * kOut, y.begin() + (b + 1) * kT * kOut);
    expect_close(yb, reference_linear(xb, wb, nullptr, kT), kIn * 0x1p-24 * 2);
  }
}

TEST(CpuCublas, LtMatmulWithAGeluBiasEpilogueMatchesTheReferenceLinearThenGelu) {
  const auto x = random_values(kT * kIn, 11), w = random_values(kOut * kIn, 12),
             bias = random_values(kOut, 13);
  std::vector<float> y(kT * kOut);
  cublas_linear::linear_lt_gelu_bias(y.data(), x.data(), w.data(), bias.data(), kT, kIn, kOut, false);
  const std::vector<double> pre = reference_linear(x, w, &bias, kT);
  const ds::Tensor want = ds::ref::gelu_new(ds::Tensor::from_f64({kT, kOut}, pre));
  std::vector<double> gelu(pre.size());
  for (std::size_t i = 0; i < pre.size(); ++i) gelu[i] = want.at(std::int64_t(i));
  expect_close(y, gelu, kIn * 0x1p-24 * 4);
  // FAST_TF32 rounds the inputs: off by more than f32 rounding.
  std::vector<float> y_tf32(kT * kOut);
  cublas_linear::linear_lt_gelu_bias(y_tf32.data(), x.data(), w.data(), bias.data(), kT, kIn, kOut, true);
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) worst = std::fmax(worst, std::fabs(y_tf32[i] - gelu[i]));
  EXPECT_GT(worst, kIn * 0x1p-24 * 4);
}

TEST(CpuCublas, AnEpilogueTheCpuDoesNotTakeIsNotSupported) {
  EXPECT_EQ(cublas_linear::lt_status_with_unsupported_epilogue(), 15);  // CUBLAS_STATUS_NOT_SUPPORTED
}

TEST(CpuCublas, AnLdaSmallerThanTheRowsIsInvalidValue) {
  EXPECT_EQ(cublas_linear::sgemm_status_with_bad_lda(), 7);  // CUBLAS_STATUS_INVALID_VALUE
}

}  // namespace
