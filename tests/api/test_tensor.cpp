#include <gtest/gtest.h>

#include "tensor.h"

namespace ds {
namespace {

TEST(Tensor, OwningRowMajorWithRounding) {
  Tensor t(DType::f16, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 12u);
  t.set(4, 1.0 + 1e-4);  // stored rounded to f16
  EXPECT_EQ(t.at(4), 1.0);
  EXPECT_EQ(row_major_strides(t.shape()), (Shape{3, 1}));
}

TEST(Tensor, StridedViewReadsTheTranspose) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_f64({2, 3}, v, DType::f32);
  TensorView tr(t.raw(), DType::f32, {3, 2}, {1, 3});  // transpose without copying
  EXPECT_FALSE(tr.contiguous());
  EXPECT_EQ(tr.at(0), 1);
  EXPECT_EQ(tr.at(1), 4);
  EXPECT_EQ(tr.at(2), 2);
  Tensor copy = Tensor::from_view(tr, DType::f64);
  EXPECT_EQ(copy.to_f64(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Tensor, RowsConcatReshape) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_f64({3, 2}, v);
  EXPECT_EQ(t.rows(1, 3).to_f64(), (std::vector<double>{3, 4, 5, 6}));
  Tensor c = Tensor::concat_rows(t.rows(0, 1), t.rows(2, 3));
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.to_f64(), (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(Tensor::concat_rows(Tensor{}, t).shape(), t.shape());
  EXPECT_THROW(t.reshaped({4, 2}), std::invalid_argument);
  EXPECT_THROW(Tensor::concat_rows(t, Tensor(DType::f64, {1, 3})), std::invalid_argument);
  EXPECT_EQ(unravel(5, {3, 2}), (Shape{2, 1}));
}

TEST(Tensor, ConversionBetweenDtypes) {
  const std::vector<double> v = {0.1, -2.5, 65519.0, 1e-8};
  Tensor t = Tensor::from_f64({4}, v);
  Tensor h = t.to(DType::f16);
  EXPECT_EQ(h.at(1), -2.5);
  EXPECT_EQ(h.at(2), 65504.0);
  EXPECT_NEAR(h.at(0), 0.1, 1e-4);
  Tensor i = t.to(DType::i32);
  EXPECT_EQ(i.at(1), -2);
}

}  // namespace
}  // namespace ds
