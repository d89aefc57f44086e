// One decoder per ggml block type (dequant_32.cpp, dequant_256.cpp), over a row for quant.cpp's
// table: a block decoder reads one block as ggml-common.h lays it out and writes its elements. Each keeps
// ggml's fp32 operation order (the scale products first, then the quant, then the min), so a result is
// bit-identical to dequantize_row_* of ggml-quants.c built without FMA contraction.
//
// The decoders are compiled once for the baseline instruction set and (x86-64) once more for AVX2,
// each build in a namespace of its own (DS_QUANT_BLOCKS_ISA, reference/CMakeLists.txt);
// ggml_row_decoder (quant.cpp) hands out the widest build the CPU runs. Neither build contracts a
// multiply and an add, so both give every element the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "quant.h"

#ifndef DS_QUANT_BLOCKS_ISA
#define DS_QUANT_BLOCKS_ISA baseline
#endif

// Every block type with ggml's name, elements and bytes per block and its decoder below, in the
// order ggml_supported_types lists them: blocks of 32 (dequant_32.cpp), then of 256 (dequant_256.cpp).
#define DS_GGML_BLOCKS_OF_32(X) \
  X(Q8_0, 32, 34, q8_0)         \
  X(Q4_0, 32, 18, q4_0)         \
  X(Q4_1, 32, 20, q4_1)         \
  X(Q5_0, 32, 22, q5_0)         \
  X(Q5_1, 32, 24, q5_1)         \
  X(IQ4_NL, 32, 18, iq4_nl)
#define DS_GGML_BLOCKS_OF_256(X) \
  X(Q2_K, 256, 84, q2_k)         \
  X(Q3_K, 256, 110, q3_k)        \
  X(Q4_K, 256, 144, q4_k)        \
  X(Q5_K, 256, 176, q5_k)        \
  X(Q6_K, 256, 210, q6_k)        \
  X(IQ4_XS, 256, 136, iq4_xs)

namespace ds::ref::quant_blocks {

// IQ4_NL's and IQ4_XS's 16 non-uniform levels (kvalues_iq4nl of ggml-common.h).
inline constexpr std::int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

namespace DS_QUANT_BLOCKS_ISA {

inline std::uint8_t u8(const std::byte* p) { return std::uint8_t(*p); }
inline float half(const std::byte* p) {
  std::uint16_t b;
  std::memcpy(&b, p, 2);
  return f16_to_f32(b);
}

// The row decoder of a type of each list above (its blocks over a row, each block's decoder inlined
// into the loop); null for a type of the other list or no block type.
QuantDecode rows_of_32(GgmlType t);
QuantDecode rows_of_256(GgmlType t);

// One block after another over a row of n elements (a multiple of Elems). The block decoders are
// file-local, so each is inlined into its row's loop: a call per block cost as much as Q8_0's
// decoding.
template <void (*Decode)(const std::byte*, float*), std::int64_t Elems, std::int64_t Bytes>
void decode_row(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n / Elems; ++i) Decode(src + i * Bytes, dst + i * Elems);
}

}  // namespace DS_QUANT_BLOCKS_ISA

// A file names the decoders of the build it is part of.
using namespace DS_QUANT_BLOCKS_ISA;

}  // namespace ds::ref::quant_blocks
