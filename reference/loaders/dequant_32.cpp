// ggml's blocks of 32 elements: one f16 scale (and for the _1 types an f16 min), low nibbles are
// elements 0-15, high nibbles 16-31; the 5-bit types keep each element's fifth bit in a 32-bit
// mask (bit j for element j).
#include "quant_blocks.h"

namespace ds::ref::quant_blocks {
namespace DS_QUANT_BLOCKS_ISA {

namespace {

std::uint32_t high_bits(const std::byte* p) {
  std::uint32_t h;
  std::memcpy(&h, p, 4);
  return h;
}

void q4_0(const std::byte* b, float* y) {
  const float d = half(b);
  const std::byte* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((u8(qs + j) & 0xF) - 8) * d;
    y[j + 16] = float((u8(qs + j) >> 4) - 8) * d;
  }
}

void q4_1(const std::byte* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const std::byte* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(u8(qs + j) & 0xF) * d + m;
    y[j + 16] = float(u8(qs + j) >> 4) * d + m;
  }
}

void q5_0(const std::byte* b, float* y) {
  const float d = half(b);
  const std::uint32_t qh = high_bits(b + 2);
  const std::byte* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = int(u8(qs + j) & 0xF) | int((qh >> j) & 1) << 4;
    const int hi = int(u8(qs + j) >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo - 16) * d;
    y[j + 16] = float(hi - 16) * d;
  }
}

void q5_1(const std::byte* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const std::uint32_t qh = high_bits(b + 4);
  const std::byte* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = int(u8(qs + j) & 0xF) | int((qh >> j) & 1) << 4;
    const int hi = int(u8(qs + j) >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo) * d + m;
    y[j + 16] = float(hi) * d + m;
  }
}

void q8_0(const std::byte* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = float(std::int8_t(u8(b + 2 + j))) * d;
}

void iq4_nl(const std::byte* b, float* y) {
  const float d = half(b);
  const std::byte* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(kIq4Levels[u8(qs + j) & 0xF]);
    y[j + 16] = d * float(kIq4Levels[u8(qs + j) >> 4]);
  }
}

}  // namespace

QuantDecode rows_of_32(GgmlType t) {
  switch (t) {
#define DS_ROW_DECODER(type, elems, bytes, decoder) \
  case GgmlType::type: return decode_row<decoder, elems, bytes>;
    DS_GGML_BLOCKS_OF_32(DS_ROW_DECODER)
#undef DS_ROW_DECODER
    default: return nullptr;
  }
}

}  // namespace DS_QUANT_BLOCKS_ISA
}  // namespace ds::ref::quant_blocks
