// ggml tensor types the loaders read, and their dequantisation (ggml-common.h block layouts,
// reference-math.md §5.4). Dequantisation keeps ggml's fp32 multiply order, so the result is
// bit-identical to ggml's dequantize_row_* and exact in the oracle's double arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "weights.h"

namespace ds::ref {

// The codes are ggml's (ggml.h); every type the quantizers of real downloaded small-model GGUFs
// write. IQ2/IQ3/IQ1 (lookup grids) and the ternary types are refused by code.
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;
  std::int64_t block_elems;  // elements per block (1 for plain floats)
  std::int64_t block_bytes;
};

// Info of a supported type code; nullopt for any other code.
std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t code);
// The supported type names, comma separated, for refusals.
std::string_view ggml_supported_types();
// Bytes of `n` elements (n a multiple of the block size).
std::int64_t ggml_nbytes(const GgmlTypeInfo& t, std::int64_t n);
// Decodes `n` elements (a multiple of the block size) of type `t` from `src` into `dst`.
void dequantize(GgmlType t, const std::byte* src, float* dst, std::int64_t n);

// The row decoder of a block type (QuantMatrix::decode): dequantize's arithmetic for that type;
// null for F32, F16 and BF16, which are held as tensors of their own dtype.
QuantDecode ggml_row_decoder(GgmlType t);
// Every build of that decoder this CPU runs, named ("baseline", "avx2"): each must give the bits of
// every other (LinearOrder.QuantizedRowsHaveTheBitsOfTheDecodedMatrix); ggml_row_decoder is the last.
std::vector<std::pair<std::string_view, QuantDecode>> ggml_row_decoder_builds(GgmlType t);

// Round-to-nearest Q8_0 (d = max|x| / 127, q = x * (1 / d)). Ties away from zero, as ggml's
// quantize_row_q8_0_ref writes weights (fixtures); ties to even, as its AVX2 and NEON paths quantize
// a matmul's activations (engine numerics: on a real prompt one activation in a few thousand lands
// on a tie, and its row's logits move by 1e-3). n must be a multiple of 32.
enum class Ties { away_from_zero, to_even };
std::vector<std::byte> quantize_q8_0(const float* x, std::int64_t n, Ties ties = Ties::away_from_zero);

// Round-to-nearest blocks of Q8_0, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K (quantize_blocks.cpp): what a
// Q4_K_M file holds, in the layouts the decoders above read. n must be a multiple of the block size.
std::vector<std::byte> quantize_blocks(GgmlType type, const float* x, std::int64_t n);

}  // namespace ds::ref
