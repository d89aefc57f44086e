// Round-to-nearest encoders of the block types a llama.cpp Q4_K_M file holds besides Q8_0 (whose
// encoder is in quant.cpp): Q5_0, Q5_1, Q4_K, Q5_K and Q6_K, each the exact inverse of its decoder
// in dequant_32.cpp / dequant_256.cpp. They write what llama.cpp and gguf-py read; they do not
// reproduce llama-quantize's bits (its K-quants search each sub-block's scale and min iteratively,
// these take them from the sub-block's range), so a file written here is a Q4_K_M of the same
// layout and about the same error, not the same file.
//
// Every scale is rounded to f16 (or to its 6- or 8-bit sub-scale) before the quants are chosen,
// so the quants are the nearest ones under the scales the decoder will read.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "quant.h"
#include "quant_blocks.h"

namespace ds::ref {

namespace {

using quant_blocks::half;

// x / step rounded to the nearest integer in [lo, hi]; 0 where the step is 0 (an all-zero block).
int nearest(float x, float step, int lo, int hi) {
  if (step == 0) return std::clamp(0, lo, hi);
  return std::clamp(int(std::lround(x / step)), lo, hi);
}

void put_half(std::byte* at, float v) {
  const std::uint16_t h = f32_to_f16(v);
  std::memcpy(at, &h, 2);
}

// The element of largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// d, qh (the fifth bits, u32), qs[16]: element j in the low nibble of qs[j], j + 16 in the high.
// The largest magnitude maps to -16 exactly (d = that / -16), so its sign needs no 17th level.
void q5_0(const float* x, std::byte* b) {
  put_half(b, signed_absmax(x, 32) / -16);
  const float d = half(b);
  std::uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = nearest(x[j], d, -16, 15) + 16, hi = nearest(x[j + 16], d, -16, 15) + 16;
    b[6 + j] = std::byte(std::uint8_t((lo & 0xF) | (hi & 0xF) << 4));
    qh |= std::uint32_t(lo >> 4) << j | std::uint32_t(hi >> 4) << (j + 16);
  }
  std::memcpy(b + 2, &qh, 4);
}

// d, m, qh, qs[16]: x = d * q + m over the block's range.
void q5_1(const float* x, std::byte* b) {
  const auto [lo_it, hi_it] = std::minmax_element(x, x + 32);
  put_half(b, (*hi_it - *lo_it) / 31);
  put_half(b + 2, *lo_it);
  const float d = half(b), m = half(b + 2);
  std::uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = nearest(x[j] - m, d, 0, 31), hi = nearest(x[j + 16] - m, d, 0, 31);
    b[8 + j] = std::byte(std::uint8_t((lo & 0xF) | (hi & 0xF) << 4));
    qh |= std::uint32_t(lo >> 4) << j | std::uint32_t(hi >> 4) << (j + 16);
  }
  std::memcpy(b + 4, &qh, 4);
}

// Q4_K and Q5_K: d, dmin, 12 bytes of 6-bit sub-block scales and mins, then (Q5_K) qh[32] and
// qs[128]. Sub-block j of 32 decodes as d * sc_j * q - dmin * m_j with q in [0, levels - 1]; its
// range is taken from min(0, its minimum) to its maximum (ggml's mins are never positive).
void k_quant_4_5(const float* x, std::byte* b, int levels) {
  float scale[8], minv[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const auto [lo_it, hi_it] = std::minmax_element(x + 32 * j, x + 32 * j + 32);
    const float lo = std::min(*lo_it, 0.0f);
    scale[j] = (*hi_it - lo) / float(levels - 1);
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  put_half(b, max_scale / 63);
  put_half(b + 2, max_min / 63);
  const float d = half(b), dmin = half(b + 2);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = nearest(scale[j], d, 0, 63);
    m[j] = nearest(minv[j], dmin, 0, 63);
  }
  // The packing get_scale_min_k4 reads (dequant_256.cpp's scale_min_k4): sub-blocks 0-3 in the low
  // six bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 in the nibbles of bytes 8-11 with their top
  // two bits in the spare top bits of bytes 0-7.
  std::byte* s = b + 4;
  std::memset(s, 0, 12);
  for (int j = 0; j < 4; ++j) {
    s[j] = std::byte(std::uint8_t(sc[j] | (sc[j + 4] >> 4) << 6));
    s[j + 4] = std::byte(std::uint8_t(m[j] | (m[j + 4] >> 4) << 6));
    s[j + 8] = std::byte(std::uint8_t((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4));
  }
  std::byte* qh = b + 16;
  std::byte* qs = levels == 32 ? b + 48 : b + 16;
  if (levels == 32) std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      int q[2];
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        q[h] = nearest(x[32 * j + l] + dmin * float(m[j]), d * float(sc[j]), 0, levels - 1);
        if (levels == 32) qh[l] |= std::byte(std::uint8_t((q[h] >> 4) << j));
      }
      qs[32 * c + l] = std::byte(std::uint8_t((q[0] & 0xF) | (q[1] & 0xF) << 4));
    }
}

// ql[128], qh[64], scales[16] (int8), d: sixteen sub-blocks of 16 as d * sc_j * q, q in [-32, 31].
// Each sub-block's largest magnitude maps to -32 (a negative sub-scale where it is positive), and
// the largest sub-scale to -128, as both ranges have one more negative level than positive.
void q6_k(const float* x, std::byte* b) {
  float scale[16];
  float max_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scale[j] = signed_absmax(x + 16 * j, 16) / -32;
    if (std::fabs(scale[j]) > std::fabs(max_scale)) max_scale = scale[j];
  }
  put_half(b + 208, max_scale / -128);
  const float d = half(b + 208);
  std::int8_t sc[16];
  for (int j = 0; j < 16; ++j) sc[j] = std::int8_t(nearest(scale[j], d, -128, 127));
  std::memcpy(b + 192, sc, 16);
  std::byte* ql = b;
  std::byte* qh = b + 128;
  std::memset(b, 0, 192);
  for (int e = 0; e < 256; ++e) {
    const int q = nearest(x[e], d * float(sc[e / 16]), -32, 31) + 32;
    // Element e of half n at offset k: ql byte 64n + k % 64 (low nibble for k < 64), qh byte
    // 32n + k % 32, bit pair k / 32 (dequant_256.cpp's q6_k).
    const int n = e / 128, k = e % 128;
    std::byte& lo = ql[64 * n + k % 64];
    lo |= std::byte(std::uint8_t((q & 0xF) << (k < 64 ? 0 : 4)));
    qh[32 * n + k % 32] |= std::byte(std::uint8_t((q >> 4) << (2 * (k / 32))));
  }
}

}  // namespace

std::vector<std::byte> quantize_blocks(GgmlType type, const float* x, std::int64_t n) {
  if (type == GgmlType::Q8_0) return quantize_q8_0(x, n);
  const auto info = ggml_type_info(std::uint32_t(type));
  void (*encode)(const float*, std::byte*) = nullptr;
  switch (type) {
    case GgmlType::Q5_0: encode = q5_0; break;
    case GgmlType::Q5_1: encode = q5_1; break;
    case GgmlType::Q4_K: encode = [](const float* v, std::byte* o) { k_quant_4_5(v, o, 16); }; break;
    case GgmlType::Q5_K: encode = [](const float* v, std::byte* o) { k_quant_4_5(v, o, 32); }; break;
    case GgmlType::Q6_K: encode = q6_k; break;
    default: break;
  }
  if (!info || encode == nullptr || n % info->block_elems != 0)
    throw std::invalid_argument(fmt::format("quantize_blocks: cannot write {} elements as ggml type {}", n,
                                            info ? info->name : std::string_view("?")));
  std::vector<std::byte> out(std::size_t(n / info->block_elems * info->block_bytes));
  for (std::int64_t k = 0; k < n / info->block_elems; ++k)
    encode(x + k * info->block_elems, out.data() + k * info->block_bytes);
  return out;
}

}  // namespace ds::ref
