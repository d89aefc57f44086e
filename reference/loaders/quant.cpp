#include "quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dtype.h"
#include "quant_blocks.h"

namespace ds::ref {

namespace {

namespace qb = quant_blocks;

using BlockDecode = void (*)(const std::byte* block, float* y);

struct Entry {
  GgmlTypeInfo info;
  BlockDecode decode;  // null for the plain float types
  QuantDecode row;     // decode's blocks over a row, without a table lookup per call
};

template <BlockDecode Decode, std::int64_t Elems, std::int64_t Bytes>
void decode_row(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n / Elems; ++i) Decode(src + i * Bytes, dst + i * Elems);
}

template <GgmlType T, std::int64_t Elems, std::int64_t Bytes, BlockDecode Decode>
constexpr Entry block_type(std::string_view name) {
  return {{T, name, Elems, Bytes}, Decode, decode_row<Decode, Elems, Bytes>};
}

constexpr Entry kTypes[] = {
    {{GgmlType::F32, "F32", 1, 4}, nullptr, nullptr},
    {{GgmlType::F16, "F16", 1, 2}, nullptr, nullptr},
    {{GgmlType::BF16, "BF16", 1, 2}, nullptr, nullptr},
    block_type<GgmlType::Q8_0, 32, 34, qb::q8_0>("Q8_0"),
    block_type<GgmlType::Q4_0, 32, 18, qb::q4_0>("Q4_0"),
    block_type<GgmlType::Q4_1, 32, 20, qb::q4_1>("Q4_1"),
    block_type<GgmlType::Q5_0, 32, 22, qb::q5_0>("Q5_0"),
    block_type<GgmlType::Q5_1, 32, 24, qb::q5_1>("Q5_1"),
    block_type<GgmlType::IQ4_NL, 32, 18, qb::iq4_nl>("IQ4_NL"),
    block_type<GgmlType::Q2_K, 256, 84, qb::q2_k>("Q2_K"),
    block_type<GgmlType::Q3_K, 256, 110, qb::q3_k>("Q3_K"),
    block_type<GgmlType::Q4_K, 256, 144, qb::q4_k>("Q4_K"),
    block_type<GgmlType::Q5_K, 256, 176, qb::q5_k>("Q5_K"),
    block_type<GgmlType::Q6_K, 256, 210, qb::q6_k>("Q6_K"),
    block_type<GgmlType::IQ4_XS, 256, 136, qb::iq4_xs>("IQ4_XS"),
};

const Entry* find_entry(std::uint32_t code) {
  for (const auto& e : kTypes)
    if (std::uint32_t(e.info.type) == code) return &e;
  return nullptr;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t code) {
  if (const Entry* e = find_entry(code)) return e->info;
  return std::nullopt;
}

std::string_view ggml_supported_types() {
  static const std::string names = [] {
    std::string s;
    for (const auto& e : kTypes) s += (s.empty() ? "" : ", ") + std::string(e.info.name);
    return s;
  }();
  return names;
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
    default: break;
  }
  const Entry* e = find_entry(std::uint32_t(t));
  if (!e || !e->decode)
    throw std::invalid_argument(fmt::format("dequantize: ggml type {} has no decoder", std::uint32_t(t)));
  e->row(src, dst, n);
}

QuantDecode ggml_row_decoder(GgmlType t) {
  const Entry* e = find_entry(std::uint32_t(t));
  return e ? e->row : nullptr;
}

std::vector<std::byte> quantize_q8_0(const float* x, std::int64_t n, Ties ties) {
  std::vector<std::byte> out(std::size_t(n / 32 * 34));
  for (std::int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::abs(xb[j]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    const std::uint16_t dh = f32_to_f16(d);
    std::byte* o = out.data() + 34 * b;
    std::memcpy(o, &dh, 2);
    for (int j = 0; j < 32; ++j) {
      const float v = xb[j] * id;
      o[2 + j] = std::byte(std::int8_t(ties == Ties::to_even ? std::nearbyint(v) : std::lround(v)));
    }
  }
  return out;
}

}  // namespace ds::ref
