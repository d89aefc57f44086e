#include "dtype.h"

#include <bit>
#include <cmath>
#include <limits>

namespace ds {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32})
    if (n == dtype_name(t)) return t;
  if (n == "fp16" || n == "half") return DType::f16;
  if (n == "fp32" || n == "float") return DType::f32;
  if (n == "fp64" || n == "double") return DType::f64;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: return 8;
    case DType::f32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

bool is_float(DType t) { return t != DType::i32; }

namespace {

// Rounds a finite double to a binary format with `mant` stored mantissa bits and exponent
// range [emin, emax] (unbiased), returning the bits. Working from the double directly avoids
// the double rounding that double -> float -> half would introduce.
std::uint16_t round_binary(double v, int mant, int emin, int emax, int bias) {
  const std::uint16_t sign = std::signbit(v) ? std::uint16_t(1u << 15) : 0;
  const int exp_bits = 15 - mant;
  const std::uint16_t inf = std::uint16_t(((1u << exp_bits) - 1u) << mant);
  if (std::isnan(v)) return std::uint16_t(sign | inf | (1u << (mant - 1)));
  double a = std::fabs(v);
  if (std::isinf(a)) return std::uint16_t(sign | inf);
  if (a == 0.0) return sign;
  int e = std::ilogb(a);
  if (e < emin) e = emin;  // subnormal range shares the minimum exponent's quantum
  // Quantum (spacing) at this exponent; scaling by it is exact in double.
  double q = std::ldexp(a, mant - e);  // value in units of the quantum
  double r = std::nearbyint(q);        // default FP env: ties to even
  std::uint64_t m = static_cast<std::uint64_t>(r);
  if (m >= (std::uint64_t(1) << (mant + 1))) {  // rounding carried into the next binade
    m >>= 1;
    ++e;
  }
  if (e > emax) return std::uint16_t(sign | inf);
  const bool normal = m >= (std::uint64_t(1) << mant);
  const std::uint16_t biased = normal ? std::uint16_t(e + bias) : 0;
  const std::uint16_t frac = std::uint16_t(m & ((1u << mant) - 1u));
  return std::uint16_t(sign | (biased << mant) | frac);
}


}  // namespace

std::uint16_t f64_to_f16(double v) { return round_binary(v, 10, -14, 15, 15); }
std::uint16_t f32_to_f16(float v) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu)) {
    // Keep the payload's top bits so an f16 NaN survives a round trip through f32.
    std::uint16_t m = std::uint16_t((b & 0x7FFFFFu) >> 13);
    if (m == 0) m = 0x200;
    return std::uint16_t(((b >> 16) & 0x8000u) | 0x7C00u | m);
  }
  return f64_to_f16(double(v));
}

std::uint16_t f64_to_bf16(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0u : 0x7FC0u;
  // bf16 has f32's exponent range; round from double in one step.
  return round_binary(v, 7, -126, 127, 127);
}

std::uint16_t f32_to_bf16(float v) {
  std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu))
    return std::uint16_t((b >> 16) | 0x40u);  // quiet NaN, sign and upper payload kept
  return f64_to_bf16(double(v));
}

float bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

double round_to(DType t, double v) {
  switch (t) {
    case DType::f64: return v;
    case DType::f32: return double(float(v));
    case DType::f16: return double(f16_to_f32(f64_to_f16(v)));
    case DType::bf16: return double(bf16_to_f32(f64_to_bf16(v)));
    case DType::i32: {
      if (std::isnan(v)) return 0.0;
      double c = std::trunc(v);
      if (c > 2147483647.0) return 2147483647.0;
      if (c < -2147483648.0) return -2147483648.0;
      return c;
    }
  }
  return v;
}

}  // namespace ds
