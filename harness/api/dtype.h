// Storage dtypes and exact IEEE conversions between them.
//
// Every conversion rounds to nearest, ties to even, and handles subnormals, infinities and
// NaN (quieted, sign kept) exactly as IEEE 754 does: the harness measures ULP distances in
// these formats, so an approximate conversion would show up as fake kernel error.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ds {

enum class DType : std::uint8_t { f64, f32, f16, bf16, i32 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);
bool is_float(DType t);

// f16 (IEEE binary16) and bf16 (the top half of binary32), as raw bits.
std::uint16_t f64_to_f16(double v);
std::uint16_t f32_to_f16(float v);
std::uint16_t f64_to_bf16(double v);
std::uint16_t f32_to_bf16(float v);
float bf16_to_f32(std::uint16_t bits);

// Every f16 is an f32: a normal one rebiases its exponent, a subnormal one is m * 2^-24, exactly;
// Inf and NaN keep their payload. Bit moves, in the header: a quantized row's decoder converts one
// scale per block. Always inlined, so the AVX2 build of the decoders never leaves a copy of its own
// for the linker to pick for baseline callers.
[[gnu::always_inline]] inline float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16, e = (bits >> 10) & 31u, m = bits & 0x3FFu;
  if (e == 31u) return std::bit_cast<float>(sign | 0x7F800000u | (m << 13));
  if (e == 0u) {
    const float v = float(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

// The value `v` takes once stored in `t` (identity for f64, saturating cast for i32).
double round_to(DType t, double v);

}  // namespace ds
