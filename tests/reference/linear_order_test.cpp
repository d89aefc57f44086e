// ref::linear against its definition, written out plainly: each element is a dot product with
// four interleaved partial sums combined as (l0 + l1) + (l2 + l3), then the tail, then the bias.
// Whatever kernel computes it (blocked, vectorised, threaded), every bit must be this one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "linear_kernel.h"
#include "loaders/quant.h"
#include "ops.h"
#include "parallel.h"
#include "synthetic.h"
#include "test_util.h"

namespace ds::ref {
namespace {

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
// dtype, with and without bias; 1031 x 131 is enough work to split its columns over two threads,
// and rows of 16411 make the kernel take token rows in several cache blocks: neither may change a
// bit.
TEST(LinearOrder, EveryElementIsThePlainDotInItsFixedOrder) {
  struct Shape3 {
    std::int64_t in, out, max_rows;
  };
  const Shape3 shapes[] = {{1, 37, 10},  {3, 37, 10},    {4, 37, 10},  {13, 37, 10},
                           {67, 37, 10}, {1031, 131, 9}, {16411, 5, 9}};
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
            EXPECT_TRUE(test::same_bits(got, want))
                << dtype_name(dt) << " in " << s.in << " rows " << rows << " bias " << (bias != nullptr)
                << " threads " << threads;
          }
        }
  }
  set_worker_threads(0);
}

// Each build of the kernel, called directly (the dispatcher runs only the widest one here).
using Kernel = void (*)(const detail::LinearArgs&, std::int64_t, std::int64_t);

// Every build of the kernel this CPU runs.
std::vector<std::pair<const char*, Kernel>> kernel_builds() {
  std::vector<std::pair<const char*, Kernel>> builds = {{"baseline", detail::linear_cols_baseline}};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) builds.emplace_back("avx2", detail::linear_cols_avx2);
#endif
  return builds;
}

TEST(LinearOrder, EveryKernelBuildGivesTheSameBits) {
  const auto builds = kernel_builds();
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (std::int64_t rows : {1, 3, 4, 7}) {
      const std::int64_t in = 131, out = 9;
      const Tensor w = random({out, in}, "kw").to(dt);
      const Tensor x = random({rows, in}, fmt::format("kx{}", rows));
      const Tensor b = random({out}, "kb");
      const Tensor want = plain_linear(x, w, &b);
      for (const auto& [name, kernel] : builds) {
        Tensor got(DType::f64, {rows, out});
        kernel({x.data<double>(), w.raw(), dt, nullptr, b.data<double>(), got.data<double>(), rows, in, out},
               0, out);
        EXPECT_TRUE(test::same_bits(got, want)) << name << " " << dtype_name(dt) << " rows " << rows;
      }
    }
}

// A block type's rows as a loader keeps them: random bytes, with each block's f16 scale fields
// (`scales_at`) set to random finite scales. Random quants and scales reach every decoder path;
// finite scales keep NaN, whose payload no test here compares, out of the products.
struct BlockTypeCase {
  GgmlType type;
  std::vector<int> scales_at;
};
const BlockTypeCase kBlockTypeCases[] = {
    {GgmlType::Q8_0, {0}},     {GgmlType::Q4_0, {0}},     {GgmlType::Q4_1, {0, 2}},   {GgmlType::Q5_0, {0}},
    {GgmlType::Q5_1, {0, 2}},  {GgmlType::IQ4_NL, {0}},   {GgmlType::Q2_K, {80, 82}}, {GgmlType::Q3_K, {108}},
    {GgmlType::Q4_K, {0, 2}},  {GgmlType::Q5_K, {0, 2}},  {GgmlType::Q6_K, {208}},    {GgmlType::IQ4_XS, {0}},
};

QuantMatrix random_quant_matrix(const BlockTypeCase& c, std::int64_t out, std::int64_t in) {
  const GgmlTypeInfo info = *ggml_type_info(std::uint32_t(c.type));
  const std::size_t row_bytes = std::size_t(ggml_nbytes(info, in));
  auto bytes = std::make_shared<std::vector<std::byte>>(row_bytes * std::size_t(out));
  NormalStream rng(5, fmt::format("q-{}", info.name));
  for (auto& b : *bytes) b = std::byte(std::uint64_t(std::abs(rng.next()) * 1e6) & 0xff);
  for (std::size_t at = 0; at < bytes->size(); at += std::size_t(info.block_bytes))
    for (int off : c.scales_at) {
      const std::uint16_t scale = f32_to_f16(float(0.01 * rng.next()));
      std::memcpy(bytes->data() + at + std::size_t(off), &scale, 2);
    }
  return QuantMatrix{.type = std::string(info.name),
                     .shape = {out, in},
                     .row_bytes = row_bytes,
                     .decode = ggml_row_decoder(c.type),
                     .owner = bytes,
                     .data = bytes->data()};
}

// Every block type read a row at a time gives the bits of the same matrix decoded up front, through
// ref::linear and every instruction set's kernel, with every build of its row decoder; 7 rows make
// a group of four and a remainder, 1-3 token rows and 4-5 take the kernel's two tilings.
TEST(LinearOrder, QuantizedRowsHaveTheBitsOfTheDecodedMatrix) {
  const std::int64_t out = 7;
  for (const BlockTypeCase& c : kBlockTypeCases) {
    const GgmlTypeInfo info = *ggml_type_info(std::uint32_t(c.type));
    const std::int64_t in = 2 * info.block_elems;
    QuantMatrix q = random_quant_matrix(c, out, in);
    const Tensor decoded = q.dequantized();
    const auto decoders = ggml_row_decoder_builds(c.type);
    ASSERT_FALSE(decoders.empty()) << info.name;
    EXPECT_EQ(decoders.back().second, ggml_row_decoder(c.type)) << info.name << ": not the widest build";
    for (const auto& [decoder_isa, decoder] : decoders) {
      q.decode = decoder;
      EXPECT_TRUE(test::same_bits(q.dequantized(), decoded)) << info.name << " decoder " << decoder_isa;
      for (std::int64_t rows : {1, 3, 4, 5}) {
        const Tensor x = random({rows, in}, fmt::format("qx{}", rows));
        const Tensor b = random({out}, "qb");
        const Tensor want = plain_linear(x, decoded, &b);
        EXPECT_TRUE(test::same_bits(linear(x, q, &b), want)) << info.name << " rows " << rows;
        for (const auto& [name, kernel] : kernel_builds()) {
          Tensor got(DType::f64, {rows, out});
          kernel({x.data<double>(), nullptr, DType::f32, &q, b.data<double>(), got.data<double>(), rows, in, out},
                 0, out);
          EXPECT_TRUE(test::same_bits(got, want))
              << info.name << " kernel " << name << " decoder " << decoder_isa << " rows " << rows;
        }
      }
    }
  }
}

// Every f16 bit pattern (normals, subnormals, zeros, infinities, NaNs) widens as Tensor::to does.
TEST(LinearOrder, EveryF16WeightWidensExactly) {
  Tensor w(DType::f16, {65536, 1});
  for (std::int64_t i = 0; i < 65536; ++i) w.data<std::uint16_t>()[i] = std::uint16_t(i);
  Tensor x(DType::f64, {1, 1});
  x.data<double>()[0] = 1.0;
  EXPECT_TRUE(test::same_bits(linear(x, w, nullptr), plain_linear(x, w, nullptr)));
}

}  // namespace
}  // namespace ds::ref
