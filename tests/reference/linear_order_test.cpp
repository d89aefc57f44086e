// ref::linear against its definition, written out plainly: each element is a dot product with
// four interleaved partial sums combined as (l0 + l1) + (l2 + l3), then the tail, then the bias.
// Whatever kernel computes it (blocked, vectorised, threaded), every bit must be this one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ops.h"
#include "parallel.h"
#include "synthetic.h"

namespace ds::ref {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The definition of every element of `linear` (ops.cpp): four interleaved lanes combined as
// (l0 + l1) + (l2 + l3), then the tail, plus the bias, over weights widened to double.
Tensor plain_linear(const Tensor& x, const Tensor& w, const Tensor* bias) {
  const Tensor wd = w.to(DType::f64);
  const std::int64_t rows = x.dim(0), in = w.dim(1), out = w.dim(0);
  Tensor y(DType::f64, {rows, out});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      const double* a = wd.data<double>() + o * in;
      const double* b = x.data<double>() + r * in;
      double l0 = 0, l1 = 0, l2 = 0, l3 = 0;
      std::int64_t i = 0;
      for (; i + 4 <= in; i += 4) {
        l0 += a[i] * b[i];
        l1 += a[i + 1] * b[i + 1];
        l2 += a[i + 2] * b[i + 2];
        l3 += a[i + 3] * b[i + 3];
      }
      double acc = (l0 + l1) + (l2 + l3);
      for (; i < in; ++i) acc += a[i] * b[i];
      y.data<double>()[r * out + o] = acc + (bias ? bias->data<double>()[o] : 0.0);
    }
  return y;
}

Tensor random(Shape s, const std::string& name) {
  Tensor t(DType::f64, std::move(s));
  NormalStream rng(1, name);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = rng.next();
  return t;
}

// Every row count up to past two blocks of four, widths with and without a tail, every weight
// dtype, with and without bias; the largest shape is enough work to split its columns over two
// threads, which must not change a bit either.
TEST(LinearOrder, EveryElementIsThePlainDotInItsFixedOrder) {
  struct Shape3 {
    std::int64_t in, out, max_rows;
  };
  const Shape3 shapes[] = {{1, 37, 10}, {3, 37, 10}, {4, 37, 10}, {13, 37, 10}, {67, 37, 10}, {1031, 131, 9}};
  for (int threads : {1, 2}) {
    set_worker_threads(threads);
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16})
      for (const Shape3& s : shapes)
        for (std::int64_t rows = 1; rows <= s.max_rows; ++rows) {
          const Tensor w = random({s.out, s.in}, fmt::format("w{}", s.in)).to(dt);
          const Tensor x = random({rows, s.in}, fmt::format("x{}-{}", rows, s.in));
          const Tensor b = random({s.out}, fmt::format("b{}", s.out));
          for (const Tensor* bias : {static_cast<const Tensor*>(nullptr), &b}) {
            const Tensor got = linear(x, w, bias), want = plain_linear(x, w, bias);
            EXPECT_TRUE(same_bits(got, want)) << dtype_name(dt) << " in " << s.in << " rows " << rows
                                              << " bias " << (bias != nullptr) << " threads " << threads;
          }
        }
  }
  set_worker_threads(0);
}

}  // namespace
}  // namespace ds::ref
