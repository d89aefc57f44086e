// The kernel behind ref::linear (ops.cpp), built once per instruction set from linear_kernel.cpp;
// ops.cpp picks the widest build the CPU runs. Every build gives every element the bits of the
// plain dot product in its fixed order (ops.h), so the choice changes speed only.
#pragma once

#include <cstdint>

#include "dtype.h"
#include "weights.h"

namespace ds::ref::detail {

struct LinearArgs {
  const double* x;  // [rows, in]
  const void* w;    // [out, in] in `wtype`: f64, f32, f16 or bf16
  DType wtype;
  const QuantMatrix* q;  // instead of w: block-quantized rows, decoded to f32 as they are read
  const double* bias;    // [out] or null
  double* y;             // [rows, out]
  std::int64_t rows, in, out;
};

// Output columns [o_begin, o_end) of y for every row: a thread's share of the columns. The AVX2
// build exists on x86-64 only.
void linear_cols_baseline(const LinearArgs& a, std::int64_t o_begin, std::int64_t o_end);
void linear_cols_avx2(const LinearArgs& a, std::int64_t o_begin, std::int64_t o_end);

}  // namespace ds::ref::detail
