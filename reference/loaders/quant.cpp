#include "quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dtype.h"
#include "quant_blocks.h"

// The decoders' AVX2 build (reference/CMakeLists.txt), declared here, the one file that picks a
// build.
#if defined(DS_LINEAR_X86)
namespace ds::ref::quant_blocks::avx2 {
QuantDecode rows_of_32(GgmlType t);
QuantDecode rows_of_256(GgmlType t);
}  // namespace ds::ref::quant_blocks::avx2
#endif

namespace ds::ref {

namespace {

namespace qb = quant_blocks;

constexpr GgmlTypeInfo kTypes[] = {{GgmlType::F32, "F32", 1, 4},
                                   {GgmlType::F16, "F16", 1, 2},
                                   {GgmlType::BF16, "BF16", 1, 2},
#define DS_TYPE_INFO(type, elems, bytes, decoder) {GgmlType::type, #type, elems, bytes},
                                   DS_GGML_BLOCKS_OF_32(DS_TYPE_INFO) DS_GGML_BLOCKS_OF_256(DS_TYPE_INFO)
#undef DS_TYPE_INFO
};

const GgmlTypeInfo* find_info(std::uint32_t code) {
  for (const auto& t : kTypes)
    if (std::uint32_t(t.type) == code) return &t;
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string_view, QuantDecode>> ggml_row_decoder_builds(GgmlType t) {
  const QuantDecode baseline = qb::rows_of_32(t) ? qb::rows_of_32(t) : qb::rows_of_256(t);
  if (!baseline) return {};
  std::vector<std::pair<std::string_view, QuantDecode>> builds = {{"baseline", baseline}};
#if defined(DS_LINEAR_X86)
  if (__builtin_cpu_supports("avx2"))
    builds.emplace_back("avx2", qb::avx2::rows_of_32(t) ? qb::avx2::rows_of_32(t) : qb::avx2::rows_of_256(t));
#endif
  return builds;
}

namespace {

// The row decoder of the widest build this CPU runs, looked up once per type code.
QuantDecode widest_row_decoder(GgmlType t) {
  static const auto widest = [] {
    std::array<QuantDecode, 32> by_code{};
    for (const auto& info : kTypes) {
      const auto builds = ggml_row_decoder_builds(info.type);
      if (!builds.empty()) by_code.at(std::size_t(info.type)) = builds.back().second;
    }
    return by_code;
  }();
  return std::size_t(t) < widest.size() ? widest[std::size_t(t)] : nullptr;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t code) {
  if (const GgmlTypeInfo* t = find_info(code)) return *t;
  return std::nullopt;
}

std::string_view ggml_supported_types() {
  static const std::string names = [] {
    std::string s;
    for (const auto& t : kTypes) s += (s.empty() ? "" : ", ") + std::string(t.name);
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
  const QuantDecode row = widest_row_decoder(t);
  if (!row)
    throw std::invalid_argument(fmt::format("dequantize: ggml type {} has no decoder", std::uint32_t(t)));
  row(src, dst, n);
}

QuantDecode ggml_row_decoder(GgmlType t) { return widest_row_decoder(t); }

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
