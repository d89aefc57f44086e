// Q8_0 / Q4_K / Q6_K dequantisation against hand-built blocks, bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "dtype.h"
#include "quant.h"

namespace ds::ref {
namespace {

void put_half(std::vector<std::byte>& b, std::size_t at, float v) {
  const std::uint16_t h = f32_to_f16(v);
  std::memcpy(b.data() + at, &h, 2);
}

TEST(Quant, Q8_0Block) {
  std::vector<std::byte> b(34);
  put_half(b, 0, 0.5f);
  for (int j = 0; j < 32; ++j) b[std::size_t(2 + j)] = std::byte(std::int8_t(j * 8 - 128));
  float y[32];
  dequantize(GgmlType::Q8_0, b.data(), y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], float(j * 8 - 128) * 0.5f) << j;
}

TEST(Quant, Q4_KBlock) {
  // d = 0.25, dmin = 0.5; sub-block scales/mins chosen to use the high bits of every packing.
  std::vector<std::byte> b(144);
  put_half(b, 0, 0.25f);
  put_half(b, 2, 0.5f);
  const int sc[8] = {1, 63, 17, 40, 5, 33, 62, 9}, mn[8] = {0, 7, 63, 21, 48, 3, 15, 60};
  std::uint8_t s[12] = {};
  for (int j = 0; j < 4; ++j) {
    s[j] = std::uint8_t(sc[j] & 63) | std::uint8_t((sc[j + 4] >> 4) << 6);
    s[j + 4] = std::uint8_t(mn[j] & 63) | std::uint8_t((mn[j + 4] >> 4) << 6);
    s[j + 8] = std::uint8_t((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
  std::memcpy(b.data() + 4, s, 12);
  for (int i = 0; i < 128; ++i) b[std::size_t(16 + i)] = std::byte(std::uint8_t((i * 37 + 11) & 0xFF));
  float y[256];
  dequantize(GgmlType::Q4_K, b.data(), y, 256);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int q = (c * 32 + l) * 37 + 11;
      const float lo = float(q & 0xF), hi = float((q & 0xFF) >> 4);
      EXPECT_EQ(y[64 * c + l], 0.25f * float(sc[2 * c]) * lo - 0.5f * float(mn[2 * c])) << c << "," << l;
      EXPECT_EQ(y[64 * c + 32 + l], 0.25f * float(sc[2 * c + 1]) * hi - 0.5f * float(mn[2 * c + 1]))
          << c << "," << l;
    }
}

TEST(Quant, Q6_KBlock) {
  std::vector<std::byte> b(210);
  for (int i = 0; i < 128; ++i) b[std::size_t(i)] = std::byte(std::uint8_t((i * 53 + 7) & 0xFF));       // ql
  for (int i = 0; i < 64; ++i) b[std::size_t(128 + i)] = std::byte(std::uint8_t((i * 29 + 3) & 0xFF));  // qh
  for (int i = 0; i < 16; ++i) b[std::size_t(192 + i)] = std::byte(std::int8_t(i * 9 - 70));  // scales
  put_half(b, 208, 0.125f);
  float y[256];
  dequantize(GgmlType::Q6_K, b.data(), y, 256);
  auto ql = [&](int i) { return int(std::uint8_t(b[std::size_t(i)])); };
  auto qh = [&](int i) { return int(std::uint8_t(b[std::size_t(128 + i)])); };
  auto scale = [&](int i) { return float(std::int8_t(b[std::size_t(192 + i)])); };
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 32; ++l) {
      const int L = 64 * half, H = 32 * half, S = 8 * half, is = l / 16;
      const int q[4] = {((ql(L + l) & 0xF) | (((qh(H + l) >> 0) & 3) << 4)) - 32,
                        ((ql(L + l + 32) & 0xF) | (((qh(H + l) >> 2) & 3) << 4)) - 32,
                        ((ql(L + l) >> 4) | (((qh(H + l) >> 4) & 3) << 4)) - 32,
                        ((ql(L + l + 32) >> 4) | (((qh(H + l) >> 6) & 3) << 4)) - 32};
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(y[128 * half + l + 32 * k], 0.125f * scale(S + is + 2 * k) * float(q[k]))
            << half << "," << l << "," << k;
    }
}

TEST(Quant, TypeTable) {
  EXPECT_EQ(ggml_type_info(12)->block_bytes, 144);
  EXPECT_EQ(ggml_type_info(14)->block_bytes, 210);
  EXPECT_EQ(ggml_type_info(8)->block_bytes, 34);
  EXPECT_FALSE(ggml_type_info(16).has_value());  // IQ2_XXS (a lookup grid) is not supported
}

TEST(Quant, Q8_0RoundTripIsCloseAndExactOnTheGrid) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[std::size_t(i)] = float(i - 32) / 16.0f;
  const auto q = quantize_q8_0(x.data(), 64);
  std::vector<float> y(64);
  dequantize(GgmlType::Q8_0, q.data(), y.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[std::size_t(i)], x[std::size_t(i)], 2.0 / 127 / 2 + 1e-3);
}

}  // namespace
}  // namespace ds::ref
