#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <string>

#include "reference.h"
#include "synthetic.h"

namespace ds::ref::test {

Tensor mat(std::int64_t rows, std::int64_t cols, std::initializer_list<double> v) {
  return Tensor::from_f64({rows, cols}, std::vector<double>(v));
}

Tensor vec(std::initializer_list<double> v) {
  return Tensor::from_f64({std::int64_t(v.size())}, std::vector<double>(v));
}

Tensor random(Shape shape, std::uint64_t seed, double std) {
  Tensor t(DType::f64, std::move(shape));
  NormalStream rng(seed, "test");
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = std * rng.next();
  return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.at(i) - b.at(i)));
  return m;
}

std::vector<std::int32_t> token_ids(int n, int vocab, std::uint64_t seed) {
  std::vector<std::int32_t> out;
  std::uint64_t x = seed * 2654435761u + 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(std::int32_t((x >> 33) % std::uint64_t(vocab)));
  }
  return out;
}

Stages all_stages(const Model& m) {
  Reference r(m);
  const auto tokens = token_ids(7, m.config.vocab, 11);
  Stages out;
  int pos = 0;
  for (int step = 0; step < 3; ++step) {
    const int n = step == 0 ? 5 : 1;
    const std::span<const std::int32_t> t(tokens.data() + pos, std::size_t(n));
    Tensor x = r.embed(t, pos).at("embed");
    for (int l = 0; l < m.config.n_layers; ++l) {
      const TensorMap s = r.layer(l, x, pos);
      for (const auto& [name, v] : s) out[{step, l, name}] = v;
      x = s.at("residual_2");
    }
    for (const auto& [name, v] : r.head(x)) out[{step, -1, name}] = v;
    pos += n;
  }
  return out;
}

void expect_same_stages(const Model& got, const Model& want, double tolerance) {
  const Stages g = all_stages(got), w = all_stages(want);
  ASSERT_EQ(g.size(), w.size());
  for (const auto& [key, t] : w) {
    SCOPED_TRACE(
        fmt::format("step {} layer {} stage {}", std::get<0>(key), std::get<1>(key), std::get<2>(key)));
    ASSERT_TRUE(g.count(key));
    ASSERT_EQ(g.at(key).shape(), t.shape());
    EXPECT_LE(max_abs_diff(g.at(key), t), tolerance);
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / fmt::format("driftscope-ref-{}-{}", ::getpid(), name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace ds::ref::test
