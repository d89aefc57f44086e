// Exact f16 / bf16 conversions, checked exhaustively over all 65536 bit patterns against
// independent implementations: GCC's _Float16 (libgcc soft conversion) for f16, and integer
// rounding on the f32 bit pattern for bf16.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "dtype.h"

namespace ds {
namespace {

bool f16_is_nan(std::uint16_t b) { return (b & 0x7C00u) == 0x7C00u && (b & 0x3FFu); }

TEST(F16, DecodeMatchesFloat16ForEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = std::uint16_t(b);
    const float ours = f16_to_f32(bits);
    const float theirs = float(std::bit_cast<_Float16>(bits));
    if (f16_is_nan(bits)) {
      EXPECT_TRUE(std::isnan(ours)) << b;
      continue;
    }
    EXPECT_EQ(std::bit_cast<std::uint32_t>(ours), std::bit_cast<std::uint32_t>(theirs)) << "pattern " << b;
  }
}

TEST(F16, RoundTripIsIdentityForEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = std::uint16_t(b);
    EXPECT_EQ(f32_to_f16(f16_to_f32(bits)), bits) << "pattern " << b;
    if (!f16_is_nan(bits)) {
      EXPECT_EQ(f64_to_f16(double(f16_to_f32(bits))), bits) << "pattern " << b;
    }
  }
}

// Every midpoint between neighbouring f16 values (and its float neighbours) is where ties-to-even
// and double rounding go wrong; compare all of them with _Float16.
TEST(F16, EncodeMidpointsAndNeighboursMatchFloat16) {
  for (std::uint32_t b = 0; b < 0x7C00; ++b) {
    for (float sign : {1.0f, -1.0f}) {
      const double lo = f16_to_f32(std::uint16_t(b)), hi = f16_to_f32(std::uint16_t(b + 1));
      const float mid = float((lo + hi) / 2) * sign;
      for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2.0f * mid + sign)}) {
        const auto theirs = std::bit_cast<std::uint16_t>(_Float16(v));
        ASSERT_EQ(f32_to_f16(v), theirs) << "value " << v;
      }
    }
  }
}

TEST(F16, EncodeRandomFloatsMatchFloat16) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const float v = std::bit_cast<float>(std::uint32_t(rng()));
    const auto theirs = std::bit_cast<std::uint16_t>(_Float16(v));
    if (std::isnan(v)) {
      EXPECT_TRUE(f16_is_nan(f32_to_f16(v)));
      continue;
    }
    ASSERT_EQ(f32_to_f16(v), theirs) << "value " << v;
  }
}

TEST(F16, SpecialValues) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // rounds up to +inf
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(f64_to_f16(std::ldexp(1.0, -25) * 1.0000001), 0x0001);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
}

// Reference bf16 rounding on the f32 bit pattern (round to nearest even in integer arithmetic).
std::uint16_t bf16_by_integer_rounding(float v) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  return std::uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

TEST(BF16, DecodeIsTheHighHalfForEveryPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float v = bf16_to_f32(std::uint16_t(b));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(v), b << 16);
  }
}

TEST(BF16, RoundTripIsIdentityForEveryNonNanPattern) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float v = bf16_to_f32(std::uint16_t(b));
    if (std::isnan(v)) continue;
    EXPECT_EQ(f32_to_bf16(v), b);
    EXPECT_EQ(f64_to_bf16(double(v)), b);
  }
}

TEST(BF16, EncodeMidpointsAndRandomMatchIntegerRounding) {
  for (std::uint32_t b = 0; b < 0x7F80; ++b) {
    const std::uint32_t mid = (b << 16) | 0x8000u;
    for (std::uint32_t bits : {mid, mid - 1, mid + 1, mid | 0x80000000u}) {
      const float v = std::bit_cast<float>(bits);
      ASSERT_EQ(f32_to_bf16(v), bf16_by_integer_rounding(v)) << std::hex << bits;
    }
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const float v = std::bit_cast<float>(std::uint32_t(rng()));
    if (std::isnan(v) || std::isinf(v)) continue;
    ASSERT_EQ(f32_to_bf16(v), bf16_by_integer_rounding(v)) << v;
  }
}

TEST(DType, RoundToAndNames) {
  EXPECT_EQ(round_to(DType::f16, 1.0 + 1e-4), 1.0);
  EXPECT_EQ(round_to(DType::i32, 3.9), 3.0);
  EXPECT_EQ(round_to(DType::f64, 0.1), 0.1);
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("f8").has_value());
}

}  // namespace
}  // namespace ds
