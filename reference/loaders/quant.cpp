#include "quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dtype.h"

namespace ds::ref {

namespace {

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},     {GgmlType::F16, "F16", 1, 2},       {GgmlType::BF16, "BF16", 1, 2},
    {GgmlType::Q8_0, "Q8_0", 32, 34}, {GgmlType::Q4_K, "Q4_K", 256, 144}, {GgmlType::Q6_K, "Q6_K", 256, 210},
};

std::uint8_t u8(const std::byte* p) { return std::uint8_t(*p); }
float half(const std::byte* p) {
  std::uint16_t b;
  std::memcpy(&b, p, 2);
  return f16_to_f32(b);
}

void q8_0(const std::byte* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = float(std::int8_t(u8(b + 2 + j))) * d;
}

// get_scale_min_k4: 6-bit scale and min of sub-block j from the 12 packed bytes.
void scale_min_k4(int j, const std::byte* s, int& sc, int& m) {
  if (j < 4) {
    sc = u8(s + j) & 63;
    m = u8(s + j + 4) & 63;
  } else {
    sc = (u8(s + j + 4) & 0xF) | ((u8(s + j - 4) >> 6) << 4);
    m = (u8(s + j + 4) >> 4) | ((u8(s + j) >> 6) << 4);
  }
}

void q4_k(const std::byte* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* q = b + 16;
  for (int c = 0; c < 4; ++c, q += 32) {
    int sc, m;
    scale_min_k4(2 * c, scales, sc, m);
    const float d1 = d * float(sc), m1 = dmin * float(m);
    scale_min_k4(2 * c + 1, scales, sc, m);
    const float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(u8(q + l) & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(u8(q + l) >> 4) - m2;
  }
}

void q6_k(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* sc = b + 192;
  const float d = half(b + 208);
  for (int n = 0; n < 2; ++n, y += 128, ql += 64, qh += 32, sc += 8)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = int((u8(ql + l) & 0xF) | (((u8(qh + l) >> 0) & 3) << 4)) - 32;
      const int q2 = int((u8(ql + l + 32) & 0xF) | (((u8(qh + l) >> 2) & 3) << 4)) - 32;
      const int q3 = int((u8(ql + l) >> 4) | (((u8(qh + l) >> 4) & 3) << 4)) - 32;
      const int q4 = int((u8(ql + l + 32) >> 4) | (((u8(qh + l) >> 6) & 3) << 4)) - 32;
      auto s = [&](int k) { return float(std::int8_t(u8(sc + is + k))); };
      y[l + 0] = d * s(0) * float(q1);
      y[l + 32] = d * s(2) * float(q2);
      y[l + 64] = d * s(4) * float(q3);
      y[l + 96] = d * s(6) * float(q4);
    }
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t code) {
  for (const auto& t : kTypes)
    if (std::uint32_t(t.type) == code) return t;
  return std::nullopt;
}

std::int64_t ggml_nbytes(const GgmlTypeInfo& t, std::int64_t n) { return n / t.block_elems * t.block_bytes; }

void dequantize(GgmlType t, const std::byte* src, float* dst, std::int64_t n) {
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, src, std::size_t(n) * 4); return;
    case GgmlType::F16:
    case GgmlType::BF16:
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        dst[i] = t == GgmlType::F16 ? f16_to_f32(b) : bf16_to_f32(b);
      }
      return;
    case GgmlType::Q8_0:
      for (std::int64_t i = 0; i < n / 32; ++i) q8_0(src + 34 * i, dst + 32 * i);
      return;
    case GgmlType::Q4_K:
      for (std::int64_t i = 0; i < n / 256; ++i) q4_k(src + 144 * i, dst + 256 * i);
      return;
    case GgmlType::Q6_K:
      for (std::int64_t i = 0; i < n / 256; ++i) q6_k(src + 210 * i, dst + 256 * i);
      return;
  }
}

std::vector<std::byte> quantize_q8_0(const float* x, std::int64_t n) {
  std::vector<std::byte> out(std::size_t(n / 32 * 34));
  for (std::int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::abs(xb[j]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    const std::uint16_t dh = f32_to_f16(d);
    std::byte* o = out.data() + 34 * b;
    std::memcpy(o, &dh, 2);
    for (int j = 0; j < 32; ++j) o[2 + j] = std::byte(std::int8_t(std::lround(xb[j] * id)));
  }
  return out;
}

}  // namespace ds::ref
