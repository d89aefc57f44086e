// Storage dtypes and exact IEEE conversions between them.
//
// Every conversion rounds to nearest, ties to even, and handles subnormals, infinities and
// NaN (quieted, sign kept) exactly as IEEE 754 does: the harness measures ULP distances in
// these formats, so an approximate conversion would show up as fake kernel error.
#pragma once

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
float f16_to_f32(std::uint16_t bits);
std::uint16_t f64_to_bf16(double v);
std::uint16_t f32_to_bf16(float v);
float bf16_to_f32(std::uint16_t bits);

// The value `v` takes once stored in `t` (identity for f64, saturating cast for i32).
double round_to(DType t, double v);

}  // namespace ds
