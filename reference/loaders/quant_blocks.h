// One decoder per ggml block type, for quant.cpp's table: `b` points at one block as ggml-common.h
// lays it out, `y` receives its elements. Each keeps ggml's fp32 operation order (the scale
// products first, then the quant, then the min), so a result is bit-identical to
// dequantize_row_* of ggml-quants.c built without FMA contraction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtype.h"

namespace ds::ref::quant_blocks {

inline std::uint8_t u8(const std::byte* p) { return std::uint8_t(*p); }
inline float half(const std::byte* p) {
  std::uint16_t b;
  std::memcpy(&b, p, 2);
  return f16_to_f32(b);
}

// IQ4_NL's and IQ4_XS's 16 non-uniform levels (kvalues_iq4nl of ggml-common.h).
inline constexpr std::int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

// Blocks of 32 (dequant_32.cpp).
void q4_0(const std::byte* b, float* y);
void q4_1(const std::byte* b, float* y);
void q5_0(const std::byte* b, float* y);
void q5_1(const std::byte* b, float* y);
void q8_0(const std::byte* b, float* y);
void iq4_nl(const std::byte* b, float* y);

// Super-blocks of 256 (dequant_256.cpp).
void q2_k(const std::byte* b, float* y);
void q3_k(const std::byte* b, float* y);
void q4_k(const std::byte* b, float* y);
void q5_k(const std::byte* b, float* y);
void q6_k(const std::byte* b, float* y);
void iq4_xs(const std::byte* b, float* y);

}  // namespace ds::ref::quant_blocks
