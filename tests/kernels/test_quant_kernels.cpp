// The projection kernels on block-quantized matrices (kernels/quant_rows.cuh), every type the GGUF
// loader reads: the weights the kernels decode as they read them are the reference dequantizer's
// (reference/loaders/dequant_*.cpp, itself held to gguf-py's), the GEMV is the double dot product
// of those values, and the outputs are the same under every SIMT thread order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "loaders/quant.h"

namespace {

using namespace kt;
using ds::ref::GgmlType;

struct QuantType {
  const char* name;
  GgmlType ggml;
  WType wt;
  std::vector<int> half_fields;  // byte offsets of the block's f16 scales (and mins)
};
const std::vector<QuantType>& quant_types() {
  static const std::vector<QuantType> types = {
      {"Q8_0", GgmlType::Q8_0, WType::q8_0, {0}},      {"Q4_0", GgmlType::Q4_0, WType::q4_0, {0}},
      {"Q4_1", GgmlType::Q4_1, WType::q4_1, {0, 2}},   {"Q5_0", GgmlType::Q5_0, WType::q5_0, {0}},
      {"Q5_1", GgmlType::Q5_1, WType::q5_1, {0, 2}},   {"IQ4_NL", GgmlType::IQ4_NL, WType::iq4_nl, {0}},
      {"Q2_K", GgmlType::Q2_K, WType::q2_k, {80, 82}}, {"Q3_K", GgmlType::Q3_K, WType::q3_k, {108}},
      {"Q4_K", GgmlType::Q4_K, WType::q4_k, {0, 2}},   {"Q5_K", GgmlType::Q5_K, WType::q5_k, {0, 2}},
      {"Q6_K", GgmlType::Q6_K, WType::q6_k, {208}},    {"IQ4_XS", GgmlType::IQ4_XS, WType::iq4_xs, {0}},
  };
  return types;
}
const QuantType& quant_type(WType wt) {
  for (const QuantType& t : quant_types())
    if (t.wt == wt) return t;
  throw std::invalid_argument("not a quantized WType");
}

// The kernels' block geometry (kernels.h, C++17 for nvcc, apart from the loader) is the loader's.
TEST(QuantBlocks, AreTheLoadersBlocks) {
  for (const QuantType& t : quant_types()) {
    const auto info = ds::ref::ggml_type_info(std::uint32_t(t.ggml));
    ASSERT_TRUE(info.has_value()) << t.name;
    EXPECT_EQ(info->name, t.name);
    EXPECT_EQ(dsk::quant_block(t.wt).elems, info->block_elems) << t.name;
    EXPECT_EQ(dsk::quant_block(t.wt).bytes, info->block_bytes) << t.name;
    EXPECT_TRUE(dsk::is_quantized(t.wt)) << t.name;
  }
  // Every block type the loader decodes has its WType.
  for (std::uint32_t code = 0; code < 256; ++code) {
    const auto info = ds::ref::ggml_type_info(code);
    if (!info || info->block_elems == 1) continue;
    bool listed = false;
    for (const QuantType& t : quant_types()) listed = listed || std::uint32_t(t.ggml) == code;
    EXPECT_TRUE(listed) << info->name << " has no WType the kernels read";
  }
}

// A [rows, cols] matrix of random blocks: every bit pattern is a valid block once its f16 scales
// are finite, so the quants, sub-block scales and high bits take every value they can. The scales
// are small, as a trained matrix's are. `values` are the reference dequantizer's.
struct QuantWeights {
  std::vector<std::uint8_t> bytes;
  std::vector<double> values;
};
QuantWeights make_quant(WType wt, int rows, int cols, std::uint32_t seed) {
  const QuantType& t = quant_type(wt);
  const dsk::QuantBlock b = dsk::quant_block(wt);
  const std::size_t blocks = std::size_t(rows) * std::size_t(cols / b.elems);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> scale(0.0005, 0.004);
  QuantWeights w;
  w.bytes.resize(blocks * std::size_t(b.bytes));
  for (auto& byte : w.bytes) byte = std::uint8_t(rng());
  for (std::size_t k = 0; k < blocks; ++k)
    for (int at : t.half_fields) {
      const std::uint16_t h = ds::f64_to_f16(scale(rng));
      std::memcpy(w.bytes.data() + k * std::size_t(b.bytes) + std::size_t(at), &h, 2);
    }
  std::vector<float> decoded(std::size_t(rows) * std::size_t(cols));
  ds::ref::dequantize(t.ggml, reinterpret_cast<const std::byte*>(w.bytes.data()), decoded.data(),
                      std::int64_t(decoded.size()));
  w.values.assign(decoded.begin(), decoded.end());
  return w;
}

std::vector<double> matvec(const std::vector<double>& W, const std::vector<double>& x, int T, int rows,
                           int cols, int row0 = 0) {
  std::vector<double> y;
  for (int t = 0; t < T; ++t)
    for (int r = row0; r < row0 + rows; ++r) {
      double acc = 0;
      for (int c = 0; c < cols; ++c) acc += W[std::size_t(r) * cols + c] * x[std::size_t(t) * cols + c];
      y.push_back(acc);
    }
  return y;
}

struct QuantGemvCase {
  WType wt;
  int T, rows, cols;
  bool chain_add;
};
void PrintTo(const QuantGemvCase& c, std::ostream* os) {
  *os << quant_type(c.wt).name << " T" << c.T << " " << c.rows << "x" << c.cols
      << (c.chain_add ? " chain-add" : "");
}
std::string case_name(const testing::TestParamInfo<QuantGemvCase>& info) {
  const QuantGemvCase& c = info.param;
  return std::string(quant_type(c.wt).name) + "_T" + std::to_string(c.T) + "_" + std::to_string(c.rows) +
         "x" + std::to_string(c.cols) + (c.chain_add ? "_chain_add" : "");
}

class QuantGemv : public testing::TestWithParam<QuantGemvCase> {};
TEST_P(QuantGemv, IsTheDotProductOfTheDecodedRows) {
  const auto p = GetParam();
  const QuantWeights w = make_quant(p.wt, p.rows, p.cols, 21);
  const Bits xb = to_f16(normal(std::size_t(p.T) * p.cols, 1.0, 22));
  const Bits rb = to_f16(normal(std::size_t(p.T) * p.rows, 1.0, 23));
  Buf dw(w.bytes), dx(xb), dy(std::size_t(p.T) * p.rows * 2), dr(rb);
  const Bits got = same_under_every_order(
      [&] {
        K().to_device(dr.p, rb.data(), dr.n);
        K().gemv(dw.p, p.wt, dx.p, nullptr, dy.p, p.chain_add ? dr.p : nullptr, p.T, p.rows, p.cols);
      },
      [&] { return dy.bits(); });
  expect_close(got, matvec(w.values, f16_values(xb), p.T, p.rows, p.cols), 1e-5, "quantized gemv");
}
INSTANTIATE_TEST_SUITE_P(
    Types, QuantGemv,
    testing::Values(
        // Every type at decode size; the blocks of 32 on a width of 96 (three chunks, most lanes idle).
        QuantGemvCase{WType::q8_0, 1, 24, 96, false}, QuantGemvCase{WType::q4_0, 1, 24, 96, false},
        QuantGemvCase{WType::q4_1, 1, 24, 96, true}, QuantGemvCase{WType::q5_0, 1, 24, 96, false},
        QuantGemvCase{WType::q5_1, 1, 24, 96, false}, QuantGemvCase{WType::iq4_nl, 1, 24, 96, false},
        QuantGemvCase{WType::q2_k, 1, 16, 512, false}, QuantGemvCase{WType::q3_k, 1, 16, 512, false},
        QuantGemvCase{WType::q4_k, 1, 16, 512, true}, QuantGemvCase{WType::q5_k, 1, 16, 512, false},
        QuantGemvCase{WType::q6_k, 1, 16, 512, false}, QuantGemvCase{WType::iq4_xs, 1, 16, 512, false},
        // Token groups (8 + 3 tokens), and a width past 32 chunks: lanes take two chunks or more.
        QuantGemvCase{WType::q4_k, 11, 13, 2304, true}, QuantGemvCase{WType::q6_k, 5, 9, 1280, false},
        QuantGemvCase{WType::q8_0, 9, 20, 1056, true}),
    case_name);

// The weights the kernel decodes, element for element: the embedding lookup rounds each to f16
// once, so its output is the f16 rounding of the reference dequantizer's value, exactly.
class QuantEmbedding : public testing::TestWithParam<WType> {};
TEST_P(QuantEmbedding, RowsAreTheDequantizersValues) {
  const WType wt = GetParam();
  const int vocab = 5, D = 512;
  const QuantWeights w = make_quant(wt, vocab, D, 31);
  const std::vector<std::int32_t> tokens = {4, 0, 2, 2};
  const int T = int(tokens.size());
  Buf dw(w.bytes), dt(tokens), out(std::size_t(T) * D * 2);
  K().embedding(dw.p, wt, dt.as<std::int32_t>(), nullptr, 0, out.p, T, D);
  const Bits got = out.bits();
  int bad = 0;
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < D; ++c) {
      const std::uint16_t want = ds::f32_to_f16(float(w.values[std::size_t(tokens[std::size_t(t)]) * D + c]));
      // Compared as numbers: the kernel adds 0.0f for the absent position table, so a -0 is +0.
      if (ds::f16_to_f32(got[std::size_t(t) * D + c]) != ds::f16_to_f32(want) && bad++ < 5)
        ADD_FAILURE() << "token " << t << " element " << c << ": got "
                      << ds::f16_to_f32(got[std::size_t(t) * D + c]) << ", the reference decodes "
                      << w.values[std::size_t(tokens[std::size_t(t)]) * D + c];
    }
  EXPECT_EQ(bad, 0);
}
INSTANTIATE_TEST_SUITE_P(Types, QuantEmbedding,
                         testing::Values(WType::q8_0, WType::q4_0, WType::q4_1, WType::q5_0, WType::q5_1,
                                         WType::iq4_nl, WType::q2_k, WType::q3_k, WType::q4_k, WType::q5_k,
                                         WType::q6_k, WType::iq4_xs),
                         [](const auto& info) { return std::string(quant_type(info.param).name); });

// fused_qkv reads q, k and v in one quantized type, packed or apart.
TEST(QuantFusedQkv, IsTheDotProductOfTheDecodedRows) {
  const int T = 3, Q = 40, KV = 16, C = 768, rows = Q + 2 * KV;
  const QuantWeights w = make_quant(WType::q5_k, rows, C, 41);
  const std::size_t row_bytes = dsk::weight_row_bytes(WType::q5_k, C);
  const Bits xb = to_f16(normal(std::size_t(T) * C, 1.0, 42));
  Buf dw(w.bytes), dx(xb), q(std::size_t(T) * Q * 2), k(std::size_t(T) * KV * 2), v(std::size_t(T) * KV * 2);
  const auto* W = static_cast<const char*>(dw.p);
  const Bits got = same_under_every_order(
      [&] {
        K().fused_qkv(W, W + Q * row_bytes, W + (Q + KV) * row_bytes, WType::q5_k, nullptr, nullptr, nullptr,
                      dx.p, q.p, k.p, v.p, T, Q, KV, C);
      },
      [&] {
        Bits out = q.bits(), kk = k.bits(), vv = v.bits();
        out.insert(out.end(), kk.begin(), kk.end());
        out.insert(out.end(), vv.begin(), vv.end());
        return out;
      });
  const auto x = f16_values(xb);
  std::vector<double> ref = matvec(w.values, x, T, Q, C);
  for (int first : {Q, Q + KV}) {
    const std::vector<double> seg = matvec(w.values, x, T, KV, C, first);
    ref.insert(ref.end(), seg.begin(), seg.end());
  }
  expect_close(got, ref, 1e-5, "quantized fused_qkv");
}

}  // namespace
