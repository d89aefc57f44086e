// ggml's super-blocks of 256 elements (the K-quants and IQ4_XS): an f16 scale (and min) for the
// whole block times a small integer scale per sub-block of 16 or 32 elements.
//
// The 2- and 3-bit types pack four elements per byte: byte l of each 32-byte group holds
// elements l, l+32, l+64 and l+96 of its 128 in bit pairs 0-1, 2-3, 4-5 and 6-7. Q3_K's third
// bit of element e lies in hmask[e % 32] at bit e / 32, and is *subtracted* when clear (-4).
#include "quant_blocks.h"

namespace ds::ref::quant_blocks {
namespace DS_QUANT_BLOCKS_ISA {

namespace {

// The two bits of element e (0-255) of a Q2_K / Q3_K block's 64 packed bytes.
int two_bits(const std::byte* qs, int e) {
  const int shift = 2 * ((e % 128) / 32);
  return (u8(qs + (e / 128) * 32 + e % 32) >> shift) & 3;
}

// Q3_K's 16 six-bit scales, stored biased by 32: low nibbles in bytes 0-7 (sub-blocks 0-7 in
// the low halves, 8-15 in the high halves), the top two bits in bytes 8-11.
int q3_k_scale(const std::byte* s, int j) {
  const int lo = j < 8 ? u8(s + j) & 0xF : u8(s + j - 8) >> 4;
  const int hi = (u8(s + 8 + j % 4) >> (2 * (j / 4))) & 3;
  return (lo | hi << 4) - 32;
}

// get_scale_min_k4: 6-bit scale and min of sub-block j from the 12 packed bytes of Q4_K / Q5_K.
void scale_min_k4(int j, const std::byte* s, int& sc, int& m) {
  if (j < 4) {
    sc = u8(s + j) & 63;
    m = u8(s + j + 4) & 63;
  } else {
    sc = (u8(s + j + 4) & 0xF) | ((u8(s + j - 4) >> 6) << 4);
    m = (u8(s + j + 4) >> 4) | ((u8(s + j) >> 6) << 4);
  }
}

// Q4_K's and Q5_K's 64-element chunk c: scale and min of its two 32-element halves, d * sc and
// dmin * m in ggml's float order.
struct ChunkScales {
  float d1, m1, d2, m2;
};
ChunkScales chunk_scales(int c, const std::byte* scales, float d, float dmin) {
  int sc, m;
  scale_min_k4(2 * c, scales, sc, m);
  ChunkScales out{};
  out.d1 = d * float(sc);
  out.m1 = dmin * float(m);
  scale_min_k4(2 * c + 1, scales, sc, m);
  out.d2 = d * float(sc);
  out.m2 = dmin * float(m);
  return out;
}

// scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
void q2_k(const std::byte* b, float* y) {
  const std::byte* qs = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  for (int e = 0; e < 256; e += 16) {
    const int s = u8(b + e / 16);
    const float dl = d * float(s & 0xF), ml = dmin * float(s >> 4);
    for (int l = 0; l < 16; ++l) y[e + l] = dl * float(two_bits(qs, e + l)) - ml;
  }
}

// hmask[32], qs[64], scales[12], d.
void q3_k(const std::byte* b, float* y) {
  const std::byte* hmask = b;
  const std::byte* qs = b + 32;
  const float d = half(b + 108);
  for (int e = 0; e < 256; e += 16) {
    const float dl = d * float(q3_k_scale(b + 96, e / 16));
    for (int l = e; l < e + 16; ++l) {
      const bool high = (u8(hmask + l % 32) >> (l / 32)) & 1;
      y[l] = dl * float(two_bits(qs, l) - (high ? 0 : 4));
    }
  }
}

// d, dmin, scales[12], qs[128]: 64-element chunks, low nibbles first.
void q4_k(const std::byte* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* q = b + 16;
  for (int c = 0; c < 4; ++c, q += 32) {
    const ChunkScales k = chunk_scales(c, scales, d, dmin);
    for (int l = 0; l < 32; ++l) *y++ = k.d1 * float(u8(q + l) & 0xF) - k.m1;
    for (int l = 0; l < 32; ++l) *y++ = k.d2 * float(u8(q + l) >> 4) - k.m2;
  }
}

// d, dmin, scales[12], qh[32], qs[128]: Q4_K's layout plus a fifth bit, qh[l] bit k for
// element 32k + l.
void q5_k(const std::byte* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* qh = b + 16;
  const std::byte* q = b + 48;
  for (int c = 0; c < 4; ++c, q += 32) {
    const ChunkScales k = chunk_scales(c, scales, d, dmin);
    for (int l = 0; l < 32; ++l)
      *y++ = k.d1 * float((u8(q + l) & 0xF) + (((u8(qh + l) >> (2 * c)) & 1) << 4)) - k.m1;
    for (int l = 0; l < 32; ++l)
      *y++ = k.d2 * float((u8(q + l) >> 4) + (((u8(qh + l) >> (2 * c + 1)) & 1) << 4)) - k.m2;
  }
}

// ql[128], qh[64], scales[16] (int8), d. Each half of 128 elements is four runs of 32: run k takes
// the low (k < 2) or high nibble of ql[l + 32 (k % 2)] and bits 2k, 2k+1 of qh[l], and the scale of
// its 16-element sub-block. A run at a time, so the compiler vectorises each one.
void q6_k(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* sc = b + 192;
  const float d = half(b + 208);
  for (int n = 0; n < 2; ++n, ql += 64, qh += 32, sc += 8)
    for (int k = 0; k < 4; ++k, y += 32) {
      const std::byte* lo = ql + 32 * (k % 2);
      const int shift = k < 2 ? 0 : 4;
      const float s0 = d * float(std::int8_t(u8(sc + 2 * k))),
                  s1 = d * float(std::int8_t(u8(sc + 2 * k + 1)));
      for (int l = 0; l < 32; ++l) {
        const int q = int(((u8(lo + l) >> shift) & 0xF) | (((u8(qh + l) >> (2 * k)) & 3) << 4)) - 32;
        y[l] = (l < 16 ? s0 : s1) * float(q);
      }
    }
}

// d, scales_h (u16: two high bits per sub-block), scales_l[4] (a nibble per sub-block), qs[128]:
// eight IQ4_NL-like sub-blocks of 32 with 6-bit scales biased by 32.
void iq4_xs(const std::byte* b, float* y) {
  const float d = half(b);
  std::uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, 2);
  const std::byte* scales_l = b + 4;
  const std::byte* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
    const int ls = ((u8(scales_l + ib / 2) >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * float(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * float(kIq4Levels[u8(qs + j) & 0xF]);
      y[j + 16] = dl * float(kIq4Levels[u8(qs + j) >> 4]);
    }
  }
}

}  // namespace

QuantDecode rows_of_256(GgmlType t) {
  switch (t) {
#define DS_ROW_DECODER(type, elems, bytes, decoder) \
  case GgmlType::type: return decode_row<decoder, elems, bytes>;
    DS_GGML_BLOCKS_OF_256(DS_ROW_DECODER)
#undef DS_ROW_DECODER
    default: return nullptr;
  }
}

}  // namespace DS_QUANT_BLOCKS_ISA
}  // namespace ds::ref::quant_blocks
