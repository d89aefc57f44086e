// Dequantisation of every supported ggml block type against hand-built blocks: one table case
// per type with its expected values worked out by hand from the block layout, and formula-checked
// whole blocks for Q4_K and Q6_K. (tests/reference/test_dequant_gguf_py.py checks real files bit
// for bit against gguf-py.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "dtype.h"
#include "quant.h"

namespace ds::ref {
namespace {

void put_half(std::vector<std::byte>& b, std::size_t at, float v) {
  const std::uint16_t h = f32_to_f16(v);
  std::memcpy(b.data() + at, &h, 2);
}

// A block built by hand: f16 fields, bytes, and elements whose values follow from the layout.
struct BlockCase {
  const char* name;
  GgmlType type;
  std::vector<std::pair<int, float>> halves;        // byte offset, value (exact in f16)
  std::vector<std::pair<int, std::uint8_t>> bytes;  // every other byte is 0
  std::vector<std::pair<int, float>> expect;        // element, value
};

void PrintTo(const BlockCase& c, std::ostream* os) { *os << c.name; }

// Each comment works one element out: quant, sub-block scale and min, result.
const BlockCase kBlocks[] = {
    // d = 0.5; q = nibble - 8. qs[0] = 0x1F: elements 0 (15) and 16 (1); qs[15] = 0x80.
    {"Q4_0",
     GgmlType::Q4_0,
     {{0, 0.5f}},
     {{2, 0x1F}, {17, 0x80}},
     {{0, 3.5f}, {16, -3.5f}, {15, -4.0f}, {31, 0.0f}, {1, -4.0f}}},
    // d = 0.25, m = -1; y = q * d + m. qs[0] = 0xF0, qs[7] = 0x3A.
    {"Q4_1",
     GgmlType::Q4_1,
     {{0, 0.25f}, {2, -1.0f}},
     {{4, 0xF0}, {11, 0x3A}},
     {{0, -1.0f}, {16, 2.75f}, {7, 1.5f}, {23, -0.25f}}},
    // d = 0.5; qh bits 0 and 17 set (elements 0 and 17); q = (nibble | high << 4) - 16.
    // qs[0] = 0x3F: element 0 = 31 - 16, element 16 = 3 - 16; qs[1] = 0x52: 2 - 16, 21 - 16.
    {"Q5_0",
     GgmlType::Q5_0,
     {{0, 0.5f}},
     {{2, 0x01}, {4, 0x02}, {6, 0x3F}, {7, 0x52}},
     {{0, 7.5f}, {16, -6.5f}, {1, -7.0f}, {17, 2.5f}}},
    // d = 0.125, m = 2; qh bits 3 and 31. qs[3] = 0x1C: element 3 = 28, 19 = 1; qs[15] = 0xE0:
    // element 15 = 0, 31 = 30.
    {"Q5_1",
     GgmlType::Q5_1,
     {{0, 0.125f}, {2, 2.0f}},
     {{4, 0x08}, {7, 0x80}, {11, 0x1C}, {23, 0xE0}},
     {{3, 5.5f}, {19, 2.125f}, {15, 2.0f}, {31, 5.75f}}},
    // d = 0.25; q = int8: -128 and 127.
    {"Q8_0", GgmlType::Q8_0, {{0, 0.25f}}, {{2, 0x80}, {33, 0x7F}}, {{0, -32.0f}, {31, 31.75f}, {1, 0.0f}}},
    // d = 0.5; levels[0] = -127, levels[15] = 113, levels[8] = 1, levels[7] = -10.
    {"IQ4_NL",
     GgmlType::IQ4_NL,
     {{0, 0.5f}},
     {{2, 0xF0}, {11, 0x78}},
     {{0, -63.5f}, {16, 56.5f}, {9, 0.5f}, {25, -5.0f}}},
    // d = 0.5, dmin = 0.25; scale byte = min << 4 | scale per 16 elements. qs[0] = 0xE7 holds
    // elements 0, 32, 64, 96 (3, 1, 2, 3): 7.5*3 - 0.75; 1*1 - 0.25; 0.5*2 - 0.5; 0.5*3 - 3.75.
    // Element 149 (sub-block 9, second 128) is qs[53] bits 0-1 = 2: 5*2 - 0.25.
    {"Q2_K",
     GgmlType::Q2_K,
     {{80, 0.5f}, {82, 0.25f}},
     {{0, 0x3F}, {2, 0x12}, {4, 0x21}, {6, 0xF1}, {9, 0x1A}, {16, 0xE7}, {16 + 53, 0x02}},
     {{0, 21.75f}, {1, -0.75f}, {32, 0.75f}, {64, 0.5f}, {96, -2.25f}, {149, 9.75f}}},
    // d = 0.5; scale 0 = (3 | 2 << 4) - 32 = 3, scale 1 = -32, scale 13 = (11 | 1 << 4) - 32 = -5.
    // Element 0: bits 3, hmask set: 1.5*3; element 1: bits 0, hmask clear: 1.5*-4; element 16:
    // -16*-4; element 210: qs[50] bits 4-5 = 2, hmask[18] bit 6 set: -2.5*2; 211: -2.5*-4.
    {"Q3_K",
     GgmlType::Q3_K,
     {{108, 0.5f}},
     {{0, 0x01}, {18, 0x40}, {32, 0x03}, {32 + 50, 0x20}, {96, 0x03}, {101, 0xB0}, {104, 0x02}, {105, 0x40}},
     {{0, 4.5f}, {1, -6.0f}, {16, 64.0f}, {210, -5.0f}, {211, 10.0f}}},
    // d = 0.5, dmin = 0.25; sub-block 0 scale 6 min 4, sub-block 1 scale 1 min 2. qs[0] = 0x3A.
    {"Q4_K",
     GgmlType::Q4_K,
     {{0, 0.5f}, {2, 0.25f}},
     {{4, 6}, {5, 1}, {8, 4}, {9, 2}, {16, 0x3A}},
     {{0, 29.0f}, {32, 1.0f}, {1, -1.0f}}},
    // d = 0.5, dmin = 1; sub-block 0 scale 10 min 3: element 0 = 7 + 16 (qh[0] bit 0) = 23;
    // sub-block 1 scale 2 min 1; sub-block 7 scale 1 | 1 << 4 = 17, min 2 | 2 << 4 = 34:
    // element 255 = 15 + 16 (qh[31] bit 7) = 31.
    {"Q5_K",
     GgmlType::Q5_K,
     {{0, 0.5f}, {2, 1.0f}},
     {{4, 10},
      {5, 2},
      {7, 0x40},
      {8, 3},
      {9, 1},
      {11, 0x80},
      {15, 0x21},
      {16, 0x01},
      {47, 0x80},
      {48, 0x07},
      {175, 0xF0}},
     {{0, 112.0f}, {1, -3.0f}, {32, -1.0f}, {255, 229.5f}}},
    // d = 0.5; scales 2, -3, 4 (int8); q = (4 bits of ql | 2 bits of qh << 4) - 32. Element 0:
    // 0xC | 1 << 4 = 28; element 32: 7 | 2 << 4 = 39; element 64: 5 | 0 = 5.
    {"Q6_K",
     GgmlType::Q6_K,
     {{208, 0.5f}},
     {{0, 0x5C}, {32, 0x07}, {128, 0x09}, {192, 2}, {194, 0xFD}, {196, 4}},
     {{0, -4.0f}, {32, -10.5f}, {64, -54.0f}}},
    // d = 0.25; sub-block scales (low nibble | two bits of scales_h << 4) - 32: sub-block 0 =
    // 1 | 2 << 4 = 33, 1 = 0, 5 = 12 | 1 << 4 = 28. Element 180 is qs[84]'s high nibble 13 (69).
    {"IQ4_XS",
     GgmlType::IQ4_XS,
     {{0, 0.25f}},
     {{2, 0x02}, {3, 0x04}, {4, 0x01}, {6, 0xC0}, {8, 0xF0}, {92, 0xD0}},
     {{0, -31.75f}, {16, 28.25f}, {32, 1016.0f}, {164, 127.0f}, {180, -69.0f}}},
};

class QuantBlock : public ::testing::TestWithParam<BlockCase> {};

TEST_P(QuantBlock, HandComputedElements) {
  const BlockCase& c = GetParam();
  const auto info = ggml_type_info(std::uint32_t(c.type));
  ASSERT_TRUE(info.has_value());
  std::vector<std::byte> b(std::size_t(info->block_bytes));
  for (const auto& [at, v] : c.halves) put_half(b, std::size_t(at), v);
  for (const auto& [at, v] : c.bytes) b[std::size_t(at)] = std::byte(v);
  std::vector<float> y(std::size_t(info->block_elems));
  dequantize(c.type, b.data(), y.data(), info->block_elems);
  for (const auto& [i, v] : c.expect) EXPECT_EQ(y[std::size_t(i)], v) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(EveryType, QuantBlock, ::testing::ValuesIn(kBlocks),
                         [](const auto& info) { return std::string(info.param.name); });

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
  // ggml-common.h's block sizes: {code, elements, bytes}.
  const std::int64_t sizes[][3] = {{2, 32, 18},    {3, 32, 20},    {6, 32, 22},    {7, 32, 24},
                                   {8, 32, 34},    {10, 256, 84},  {11, 256, 110}, {12, 256, 144},
                                   {13, 256, 176}, {14, 256, 210}, {20, 32, 18},   {23, 256, 136}};
  for (const auto& [code, elems, bytes] : sizes) {
    ASSERT_TRUE(ggml_type_info(std::uint32_t(code)).has_value()) << code;
    EXPECT_EQ(ggml_type_info(std::uint32_t(code))->block_elems, elems) << code;
    EXPECT_EQ(ggml_type_info(std::uint32_t(code))->block_bytes, bytes) << code;
  }
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

// The writer's encoders (quantize_blocks) against our decoders, on patterns a checkpoint holds and
// ones that break a careless encoder: the error of normal weights within what the type's levels
// allow, an all-zero block exactly zero, every block's largest magnitude kept (the encoders map it
// to an end level), and a lone spike that leaves its zero neighbours near zero.
struct EncodeCase {
  const char* name;
  GgmlType type;
  double max_rms;  // of the error, relative to the weights' rms, on normal weights
};
void PrintTo(const EncodeCase& c, std::ostream* os) { *os << c.name; }

class QuantEncode : public ::testing::TestWithParam<EncodeCase> {};

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  const auto q = quantize_blocks(type, x.data(), std::int64_t(x.size()));
  EXPECT_EQ(std::int64_t(q.size()),
            ggml_nbytes(*ggml_type_info(std::uint32_t(type)), std::int64_t(x.size())));
  std::vector<float> y(x.size());
  dequantize(type, q.data(), y.data(), std::int64_t(x.size()));
  return y;
}

TEST_P(QuantEncode, DecodesToTheWeightsWithinTheTypesLevels) {
  const EncodeCase& c = GetParam();
  const int n = 4096;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<float> x(n);
  for (float& v : x) v = g(rng);
  const std::vector<float> y = round_trip(c.type, x);
  double err = 0, ref = 0;
  for (int i = 0; i < n; ++i) {
    err += double(y[std::size_t(i)] - x[std::size_t(i)]) * double(y[std::size_t(i)] - x[std::size_t(i)]);
    ref += double(x[std::size_t(i)]) * double(x[std::size_t(i)]);
  }
  EXPECT_LT(std::sqrt(err / ref), c.max_rms);
  // Each 32-element group's largest magnitude: an end level of its block, up to the rounding of
  // the scales to f16 and (K types) to their 6- or 8-bit sub-scales.
  for (int b = 0; b < n; b += 32) {
    int at = b;
    for (int i = b; i < b + 32; ++i)
      if (std::fabs(x[std::size_t(i)]) > std::fabs(x[std::size_t(at)])) at = i;
    EXPECT_NEAR(y[std::size_t(at)], x[std::size_t(at)], 0.05 * std::fabs(x[std::size_t(at)]))
        << "element " << at;
  }
}

TEST_P(QuantEncode, ZerosStayZeroAndASpikeLeavesItsNeighboursAlone) {
  const EncodeCase& c = GetParam();
  std::vector<float> x(512, 0.0f);
  for (float v : round_trip(c.type, x)) ASSERT_EQ(v, 0.0f);
  x[300] = -3.0f;  // negative: the end level the signed types have one more of
  x[40] = 0.5f;
  const std::vector<float> y = round_trip(c.type, x);
  EXPECT_NEAR(y[300], -3.0f, 0.03);
  EXPECT_NEAR(y[40], 0.5f, 0.01);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i != 300 && i != 40) {
      EXPECT_NEAR(y[i], 0.0f, 0.15) << i;
    }
  }
}

// Thresholds about 1.3x what these encoders measure here (Q8_0 0.0053, Q5_0 0.042, Q5_1 0.037,
// Q4_K 0.078, Q5_K 0.038, Q6_K 0.019): a block's range over its levels.
const EncodeCase kEncodeCases[] = {
    {"Q8_0", GgmlType::Q8_0, 0.007}, {"Q5_0", GgmlType::Q5_0, 0.055}, {"Q5_1", GgmlType::Q5_1, 0.05},
    {"Q4_K", GgmlType::Q4_K, 0.10},  {"Q5_K", GgmlType::Q5_K, 0.05},  {"Q6_K", GgmlType::Q6_K, 0.025},
};
INSTANTIATE_TEST_SUITE_P(Writer, QuantEncode, ::testing::ValuesIn(kEncodeCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Quant, EncodersRefuseATypeOrLengthTheyCannotWrite) {
  std::vector<float> x(256, 1.0f);
  EXPECT_THROW(quantize_blocks(GgmlType::Q2_K, x.data(), 256), std::invalid_argument);
  EXPECT_THROW(quantize_blocks(GgmlType::Q4_K, x.data(), 96), std::invalid_argument);
}

}  // namespace
}  // namespace ds::ref
