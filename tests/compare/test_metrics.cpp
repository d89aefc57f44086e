// Every metric against hand-computed values, including zeros, subnormals, +-0, NaN and +-Inf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "metrics.h"

namespace ds {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor t64(std::vector<double> v) { return Tensor::from_f64({std::int64_t(v.size())}, v); }

Metrics metrics(std::vector<double> r, std::vector<double> c, DType dt = DType::f64, Tolerance tol = {}) {
  const Tensor a = t64(std::move(r)), b = t64(std::move(c));
  return compute_metrics(a.view(), b.view(), dt, tol);
}

TEST(Metrics, HandComputedBasics) {
  const Metrics m = metrics({1, 2, 3, 4}, {1, 2.5, 3, 3}, DType::f64, {0.4, 0});
  EXPECT_EQ(m.numel, 4);
  EXPECT_DOUBLE_EQ(m.max_abs, 1.0);
  EXPECT_EQ(m.max_abs_index, 3);
  EXPECT_DOUBLE_EQ(m.max_abs_ref, 4);
  EXPECT_DOUBLE_EQ(m.max_abs_cand, 3);
  EXPECT_DOUBLE_EQ(m.mean_abs, 0.375);
  EXPECT_DOUBLE_EQ(m.rms, std::sqrt(1.25 / 4));
  EXPECT_DOUBLE_EQ(m.max_rel, 0.25);
  EXPECT_DOUBLE_EQ(m.nmse, 1.25 / 30);
  EXPECT_NEAR(m.sqnr_db, 10 * std::log10(30 / 1.25), 1e-12);
  EXPECT_NEAR(m.cosine, (1 + 5 + 9 + 12) / std::sqrt(30 * (1 + 6.25 + 9 + 9)), 1e-15);
  EXPECT_EQ(m.mismatches, 2);
  EXPECT_EQ(m.first_mismatch, 1);
  EXPECT_DOUBLE_EQ(m.first_ref, 2);
  EXPECT_DOUBLE_EQ(m.first_cand, 2.5);
  EXPECT_DOUBLE_EQ(m.min_atol, 1.0);   // with rtol 0, the largest |d|
  EXPECT_DOUBLE_EQ(m.min_rtol, 0.15);  // (1 - 0.4) / 4 at index 3
  EXPECT_EQ(m.nan_ref + m.nan_cand + m.inf_ref + m.inf_cand, 0);
  EXPECT_EQ(m.first_nan, -1);
  EXPECT_TRUE(m.inf_agree);
}

TEST(Metrics, AllZerosAndSignedZeros) {
  const Metrics m = metrics({0, -0.0, 0}, {-0.0, 0, 0}, DType::f32);
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.max_ulp, 0);
  EXPECT_EQ(m.ulp_hist[0], 3);
  EXPECT_EQ(m.cosine, 1);
  EXPECT_EQ(m.nmse, 0);
  EXPECT_EQ(m.sqnr_db, kInf);
  EXPECT_EQ(m.max_rel, 0);
  EXPECT_EQ(m.mismatches, 0);
}

TEST(Metrics, RelativeErrorIsSafeNearZero) {
  const Metrics m = metrics({0, 1}, {1e-30, 1}, DType::f64, {1e-20, 0});
  EXPECT_TRUE(std::isfinite(m.max_rel));
  EXPECT_GT(m.max_rel, 1e200);
  EXPECT_EQ(m.cosine, 1.0 / std::sqrt(1 + 1e-60));
  EXPECT_EQ(m.mismatches, 0);
}

TEST(Metrics, Subnormals) {
  const double f32_den = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance(DType::f32, 0, f32_den), 1);
  EXPECT_EQ(ulp_distance(DType::f32, -f32_den, f32_den), 2);
  EXPECT_EQ(ulp_distance(DType::f16, 0x1p-24, 0), 1);
  EXPECT_EQ(ulp_distance(DType::f16, 0x1p-24, -0x1p-24), 2);
  EXPECT_EQ(ulp_distance(DType::f16, 0x1p-14, 0x1p-14 - 0x1p-24), 1);  // normal/subnormal border
  EXPECT_EQ(ulp_distance(DType::bf16, 0x1p-133, 0), 1);                // bf16 denorm_min
  const Metrics m = metrics({f32_den, 0}, {0, f32_den}, DType::f32);
  EXPECT_EQ(m.max_ulp, 1);
  EXPECT_EQ(m.ulp_hist[1], 2);
  EXPECT_DOUBLE_EQ(m.max_abs, f32_den);
}

TEST(Metrics, NaNIsCountedAndNeverHidden) {
  const Metrics m = metrics({1, 2, 3, kNaN}, {1, 2, kNaN, kNaN});
  EXPECT_EQ(m.nan_cand, 2);
  EXPECT_EQ(m.nan_ref, 1);
  EXPECT_EQ(m.first_nan, 2);
  EXPECT_TRUE(std::isnan(m.max_abs));
  EXPECT_EQ(m.max_ulp, kInf);
  EXPECT_EQ(m.ulp_hist[kUlpBuckets - 1], 2);
  EXPECT_EQ(m.mismatches, 2);
  EXPECT_EQ(m.first_mismatch, 2);
}

TEST(Metrics, MatchingInfinitiesAreExactAndKeepMetricsFinite) {
  const Metrics m = metrics({kInf, -kInf, 1}, {kInf, -kInf, 1});
  EXPECT_TRUE(m.inf_agree);
  EXPECT_EQ(m.inf_ref, 2);
  EXPECT_EQ(m.inf_cand, 2);
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.rms, 0);
  EXPECT_EQ(m.cosine, 1);
  EXPECT_EQ(m.mismatches, 0);
  EXPECT_EQ(m.ulp_hist[0], 3);
}

TEST(Metrics, DisagreeingInfinityIsAnInfiniteErrorNotNaN) {
  for (double c : {-kInf, 1.0}) {
    const Metrics m = metrics({kInf, 1}, {c, 1}, DType::f64, {1e9, 1e9});
    EXPECT_FALSE(m.inf_agree);
    EXPECT_EQ(m.max_abs, kInf);
    EXPECT_EQ(m.mismatches, 1);
    EXPECT_EQ(m.first_mismatch, 0);
    EXPECT_FALSE(m.max_abs <= 1e300);  // no threshold passes it
  }
}

TEST(Metrics, UlpF16ExhaustiveOnFiniteRange) {
  // Neighbouring f16 bit patterns are exactly 1 ULP apart, over every positive and negative
  // finite value; +-0 are 0 apart; crossing zero adds the two magnitudes.
  for (std::uint16_t b = 0; b < 0x7bff; ++b) {
    const double a = f16_to_f32(b), n = f16_to_f32(std::uint16_t(b + 1));
    ASSERT_EQ(ulp_distance(DType::f16, a, n), 1) << b;
    ASSERT_EQ(ulp_distance(DType::f16, -a, -n), 1) << b;
    ASSERT_EQ(ulp_distance(DType::f16, -a, n), 2.0 * b + 1) << b;
  }
  EXPECT_EQ(ulp_distance(DType::f16, 65504, kInf), 1);
}

TEST(Metrics, UlpBf16ExhaustiveOnFiniteRange) {
  for (std::uint16_t b = 0; b < 0x7f7f; ++b) {
    const double a = bf16_to_f32(b), n = bf16_to_f32(std::uint16_t(b + 1));
    ASSERT_EQ(ulp_distance(DType::bf16, a, n), 1) << b;
    ASSERT_EQ(ulp_distance(DType::bf16, -a, -n), 1) << b;
  }
  // Values are rounded to bf16 first: 1 + 2^-10 rounds to 1.
  EXPECT_EQ(ulp_distance(DType::bf16, 1.0, 1.0 + 0x1p-10), 0);
  EXPECT_EQ(ulp_distance(DType::bf16, 1.0, 1.0 + 0x1p-7), 1);
}

TEST(Metrics, UlpBuckets) {
  EXPECT_EQ(ulp_bucket(0), 0);
  EXPECT_EQ(ulp_bucket(1), 1);
  EXPECT_EQ(ulp_bucket(3), 2);
  EXPECT_EQ(ulp_bucket(15), 3);
  EXPECT_EQ(ulp_bucket(255), 4);
  EXPECT_EQ(ulp_bucket(65535), 5);
  EXPECT_EQ(ulp_bucket(65536), 6);
  EXPECT_EQ(ulp_bucket(kInf), 7);
}

// Bitwise equality of every field (NaN equals NaN here).
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
void expect_same(const Metrics& a, const Metrics& b) {
#define DS_SAME(f) EXPECT_TRUE(same_bits(double(a.f), double(b.f))) << #f << ": " << a.f << " vs " << b.f
  DS_SAME(numel);
  DS_SAME(max_abs);
  DS_SAME(max_abs_index);
  DS_SAME(max_abs_ref);
  DS_SAME(max_abs_cand);
  DS_SAME(mean_abs);
  DS_SAME(rms);
  DS_SAME(max_rel);
  DS_SAME(max_ulp);
  DS_SAME(mean_ulp);
  DS_SAME(cosine);
  DS_SAME(nmse);
  DS_SAME(sqnr_db);
  DS_SAME(ref_rms);
  DS_SAME(mismatches);
  DS_SAME(first_mismatch);
  DS_SAME(first_ref);
  DS_SAME(first_cand);
  DS_SAME(nan_ref);
  DS_SAME(nan_cand);
  DS_SAME(inf_ref);
  DS_SAME(inf_cand);
  DS_SAME(first_nan);
  DS_SAME(inf_agree);
  DS_SAME(min_atol);
  DS_SAME(min_rtol);
#undef DS_SAME
  EXPECT_EQ(a.ulp_hist, b.ulp_hist);
}

TEST(Metrics, ResultDoesNotDependOnThreadCount) {
  const std::int64_t n = 1'000'003;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  std::vector<double> r(n), c(n);
  for (std::int64_t i = 0; i < n; ++i) {
    r[std::size_t(i)] = g(rng);
    c[std::size_t(i)] = double(float(r[std::size_t(i)] + 1e-4 * g(rng)));
  }
  c[123456] = kNaN;
  const Tensor a = Tensor::from_f64({n}, r), b = Tensor::from_f64({n}, c, DType::f32);
  const Metrics m1 = compute_metrics(a.view(), b.view(), DType::f32, {1e-4, 1e-3}, 1);
  for (int threads : {2, 3, 8})
    expect_same(m1, compute_metrics(a.view(), b.view(), DType::f32, {1e-4, 1e-3}, threads));
  // The f32 in-place path and the widened f64 path agree.
  const Tensor b64 = b.to(DType::f64);
  expect_same(m1, compute_metrics(a.view(), b64.view(), DType::f32, {1e-4, 1e-3}, 2));
  EXPECT_EQ(m1.first_nan, 123456);
}

// The vectorised f32 block loop against the element-by-element loop: every count, maximum,
// index and histogram bucket identical; sums equal up to summation order.
struct LaneCase {
  const char* name;
  DType ref_dtype, cand_dtype;
  void (*plant)(std::vector<double>& r, std::vector<double>& c);  // edits the noisy data
};

void plant_nothing(std::vector<double>&, std::vector<double>&) {}
void plant_nan_and_inf(std::vector<double>& r, std::vector<double>& c) {
  c[1500] = kNaN;            // block 1 goes element by element
  r[3000] = c[3000] = kInf;  // matched: exact
  c[4100] = -kInf;           // unmatched
}
void plant_zeros_and_subnormal_ref(std::vector<double>& r, std::vector<double>& c) {
  for (std::size_t i = 0; i < r.size(); i += 7) r[i] = 0;  // mag == 0: rel uses 1/tiny
  c[14] = 0;
  r[2050] = 1e-310;  // a subnormal f64 reference sends its block down the exact path
  c[2050] = 2e-310;
}
void plant_tied_maxima(std::vector<double>& r, std::vector<double>& c) {
  for (std::size_t i : {1030u, 1031u, 5000u}) {  // equal |diff| three times: the first index wins
    r[i] = 1;
    c[i] = 1.5;
  }
}
void plant_exact(std::vector<double>& r, std::vector<double>& c) { c = r; }

struct LaneBuild {
  const char* name;
  ScanPath path;
};
// Readable case names in ctest listings instead of the structs' raw bytes.
void PrintTo(const LaneCase& c, std::ostream* os) { *os << c.name; }
void PrintTo(const LaneBuild& b, std::ostream* os) { *os << b.name; }

const LaneBuild kLaneBuilds[] = {{"baseline", ScanPath::lanes_baseline},
                                 {"avx2", ScanPath::lanes_avx2},
                                 {"avx512", ScanPath::lanes_avx512}};

class LanePath : public ::testing::TestWithParam<std::tuple<LaneBuild, LaneCase>> {};

TEST_P(LanePath, AgreesWithTheScalarLoop) {
  const auto& [build, lc] = GetParam();
  if (!scan_path_supported(build.path)) GTEST_SKIP() << "this CPU cannot run the " << build.name << " build";
  const std::int64_t n = 5 * 1024 + 77;  // whole blocks and a tail
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  std::vector<double> r(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < r.size(); ++i) {
    r[i] = double(float(g(rng)));
    c[i] = double(float(r[i] * (1 + 3e-7 * g(rng)) + (i % 999 == 0 ? 1e-3 : 0)));
  }
  lc.plant(r, c);
  const Tensor a = Tensor::from_f64({n}, r, lc.ref_dtype), b = Tensor::from_f64({n}, c, lc.cand_dtype);
  const Tolerance tol{1e-5, 1e-6};
  const Metrics fast = compute_metrics(a.view(), b.view(), DType::f32, tol, 1, build.path);
  const Metrics slow = compute_metrics(a.view(), b.view(), DType::f32, tol, 1, ScanPath::scalar);
#define DS_EXACT(f) \
  EXPECT_TRUE(same_bits(double(fast.f), double(slow.f))) << #f << ": " << fast.f << " vs " << slow.f
  DS_EXACT(max_abs);
  DS_EXACT(max_abs_index);
  DS_EXACT(max_abs_ref);
  DS_EXACT(max_abs_cand);
  DS_EXACT(max_rel);
  DS_EXACT(max_ulp);
  DS_EXACT(mean_ulp);
  DS_EXACT(mismatches);
  DS_EXACT(first_mismatch);
  DS_EXACT(first_ref);
  DS_EXACT(first_cand);
  DS_EXACT(nan_ref);
  DS_EXACT(nan_cand);
  DS_EXACT(inf_ref);
  DS_EXACT(inf_cand);
  DS_EXACT(first_nan);
  DS_EXACT(inf_agree);
  DS_EXACT(min_atol);
  DS_EXACT(min_rtol);
#undef DS_EXACT
  EXPECT_EQ(fast.ulp_hist, slow.ulp_hist);
  for (auto [x, y] : {std::pair{fast.mean_abs, slow.mean_abs},
                      {fast.rms, slow.rms},
                      {fast.ref_rms, slow.ref_rms},
                      {fast.cosine, slow.cosine},
                      {fast.nmse, slow.nmse}}) {
    if (std::isfinite(y)) {
      EXPECT_NEAR(x, y, 1e-12 * std::fabs(y));
    } else {
      EXPECT_TRUE(same_bits(x, y) || (std::isnan(x) && std::isnan(y)));
    }
  }
  if (lc.plant != plant_exact) {
    EXPECT_GT(slow.mismatches, 0);
  }
}

const LaneCase kLaneCases[] = {
    {"f32_f32_noise", DType::f32, DType::f32, plant_nothing},
    {"f64_f32_noise", DType::f64, DType::f32, plant_nothing},
    {"f32_f64_noise", DType::f32, DType::f64, plant_nothing},
    {"f64_f64_noise", DType::f64, DType::f64, plant_nothing},
    {"f32_f32_nan_inf", DType::f32, DType::f32, plant_nan_and_inf},
    {"f64_f64_nan_inf", DType::f64, DType::f64, plant_nan_and_inf},
    {"f64_f32_zeros_subnormal", DType::f64, DType::f32, plant_zeros_and_subnormal_ref},
    {"f32_f32_zeros", DType::f32, DType::f32, plant_zeros_and_subnormal_ref},
    {"f32_f32_tied_maxima", DType::f32, DType::f32, plant_tied_maxima},
    {"f64_f32_exact", DType::f64, DType::f32, plant_exact},
};
INSTANTIATE_TEST_SUITE_P(
    Metrics, LanePath, ::testing::Combine(::testing::ValuesIn(kLaneBuilds), ::testing::ValuesIn(kLaneCases)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
    });

TEST(Metrics, StridedViewsAreWidened) {
  const Tensor a = Tensor::from_f64({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_f64({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 7}, DType::f16);
  const Metrics m = compute_metrics(a.view().slice_rows(1, 2), b.view().slice_rows(1, 2), DType::f16, {});
  EXPECT_EQ(m.numel, 3);
  EXPECT_EQ(m.max_abs, 1);
  EXPECT_EQ(m.max_abs_index, 2);
}

TEST(Metrics, PerRowRelativeError) {
  const Tensor a = Tensor::from_f64({2, 2}, std::vector<double>{3, 4, 0, 0});
  const Tensor b = Tensor::from_f64({2, 2}, std::vector<double>{3, 4.5, 0, 1});
  const auto e = per_row_relative_error(a.view(), b.view());
  ASSERT_EQ(e.size(), 2u);
  EXPECT_DOUBLE_EQ(e[0], 0.5 / 5);
  EXPECT_DOUBLE_EQ(e[1], 1);  // a zero row reports the absolute norm
}

TEST(Metrics, ContentHashIsFnv1aOfStoredBytes) {
  const Tensor a = Tensor::from_f64({2}, std::vector<double>{1, 2}, DType::f16);
  const Tensor b = Tensor::from_f64({2}, std::vector<double>{1, 2}, DType::f16);
  const Tensor c = Tensor::from_f64({2}, std::vector<double>{1, 2.001}, DType::f16);
  EXPECT_EQ(content_hash(a), content_hash(b));
  EXPECT_NE(content_hash(a), content_hash(c));
  EXPECT_EQ(content_hash(Tensor{}), 0xcbf29ce484222325ull);  // FNV-1a offset basis
  // f16 1.0 = 0x3c00, little-endian bytes 00 3c; hand-folded FNV-1a.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint8_t byte : {0x00, 0x3c}) h = (h ^ byte) * 0x100000001b3ull;
  EXPECT_EQ(content_hash(Tensor::from_f64({1}, std::vector<double>{1}, DType::f16)), h);
}

}  // namespace
}  // namespace ds
