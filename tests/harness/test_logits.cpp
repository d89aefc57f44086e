#include <gtest/gtest.h>

#include <cmath>

#include "logits.h"

namespace ds {
namespace {

TEST(Logits, KlAndTop1AgainstHandComputedValues) {
  // Row 0: identical -> KL 0, same argmax. Row 1: p = softmax(0, ln 3) = (1/4, 3/4),
  // q = softmax(ln 3, 0) = (3/4, 1/4): KL = 1/4 ln(1/3) + 3/4 ln 3 = 0.5 ln 3, argmax differs.
  const double l3 = std::log(3.0);
  const std::vector<double> r = {1, 2, 0, l3}, c = {1, 2, l3, 0};
  const LogitsMetrics m = compare_logits(Tensor::from_f64({2, 2}, r), Tensor::from_f64({2, 2}, c));
  EXPECT_NEAR(m.max_kl, 0.5 * l3, 1e-12);
  EXPECT_NEAR(m.mean_kl, 0.25 * l3, 1e-12);
  EXPECT_DOUBLE_EQ(m.top1_agreement, 0.5);
  EXPECT_EQ(m.rows, 2);
}

TEST(Logits, ShiftInvariantAndShapeChecked) {
  const std::vector<double> r = {1, 2, 3}, c = {101, 102, 103};
  const LogitsMetrics m = compare_logits(Tensor::from_f64({1, 3}, r), Tensor::from_f64({1, 3}, c));
  EXPECT_NEAR(m.max_kl, 0, 1e-12);
  EXPECT_THROW(compare_logits(Tensor::from_f64({1, 3}, r), Tensor::from_f64({3, 1}, c)),
               std::invalid_argument);
}

}  // namespace
}  // namespace ds
