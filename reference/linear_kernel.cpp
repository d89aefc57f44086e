// ref::linear's kernel, compiled once per instruction set (DS_LINEAR_ISA names the build; see
// reference/CMakeLists.txt). Built with -ffp-contract=off and without FMA: every product is
// rounded before it is added, as in the scalar definition.
//
// The definition of each output element (ops.h) is a dot product with four interleaved partial
// sums l0..l3 (element i goes to lane i % 4), combined as (l0 + l1) + (l2 + l3), then the tail
// added in order, then the bias (or +0.0). Here the four lanes of one element live side by side
// in one 4-wide vector, so lane k still adds exactly the products it adds in the scalar loop, in
// the same order; a tile computes R token rows against C weight rows at once, so each widened
// weight is loaded once per R rows and R*C independent add chains hide the add latency.
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "linear_kernel.h"

#define DS_LINEAR_CAT2(a, b) a##b
#define DS_LINEAR_CAT(a, b) DS_LINEAR_CAT2(a, b)

namespace ds::ref::detail {
namespace {

typedef double Lanes __attribute__((vector_size(32)));

inline Lanes load(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// f16 to double, exactly (the value f16_to_f32 gives, widened), without a call per element:
// normal numbers rebias the exponent, subnormals are m * 2^-24; Inf and NaN, rare in weights,
// go through the shared conversion so NaN payloads widen as they always did.
inline double f16_wide(std::uint16_t h) {
  const std::uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 31u) return double(f16_to_f32(h));
  double v;
  if (e == 0u) {
    v = double(m) * 0x1p-24;
  } else {
    v = std::bit_cast<double>((std::uint64_t(e + 1008u) << 52) | (std::uint64_t(m) << 42));
  }
  return (h & 0x8000u) ? -v : v;
}

// A weight row's elements, four at a time, as doubles: f64 rows as they are, f32 rows (stored or
// decoded from quantized blocks) widened in the register, which is exact.
inline Lanes load_w(const double* p) { return load(p); }
inline Lanes load_w(const float* p) {
#if defined(__AVX__)
  // One vcvtps2pd from memory; GCC splits __builtin_convertvector's form into two halves.
  return Lanes(_mm256_cvtps_pd(_mm_loadu_ps(p)));
#else
  typedef float Lanes4f __attribute__((vector_size(16)));
  Lanes4f v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, Lanes);
#endif
}

// f16 and bf16 weight rows [o, o + c) widened to double into `out` (row stride `in`).
void widen_rows(const LinearArgs& a, std::int64_t o, std::int64_t c, double* out) {
  const std::int64_t n = c * a.in;
  const std::uint16_t* p = static_cast<const std::uint16_t*>(a.w) + o * a.in;
  if (a.wtype == DType::bf16) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = double(std::bit_cast<float>(std::uint32_t(p[i]) << 16));
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f16_wide(p[i]);
  }
}

// Rows [0, R) of x (row stride in) against C weight rows w (row stride in), into y's columns
// o..o+C-1 (row stride out).
template <int R, int C, typename W>
inline void tile(const LinearArgs& a, const W* w, const double* x, double* y, std::int64_t o) {
  const std::int64_t in = a.in, n4 = in & ~std::int64_t(3);
  Lanes acc[R][C] = {};
  for (std::int64_t i = 0; i < n4; i += 4) {
    Lanes wv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) wv[c] = load_w(w + c * in + i);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const Lanes xv = load(x + r * in + i);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] += wv[c] * xv;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const Lanes& l = acc[r][c];
      double s = (l[0] + l[1]) + (l[2] + l[3]);
      for (std::int64_t i = n4; i < in; ++i) s += double(w[c * in + i]) * x[r * in + i];
      y[r * a.out + o + c] = s + (a.bias ? a.bias[o + c] : 0.0);
    }
}

// Token rows [r0, r1) against C weight rows, four rows at a time.
template <int C, typename W>
void rows_against(const LinearArgs& a, const W* w, std::int64_t r0, std::int64_t r1, std::int64_t o) {
  std::int64_t r = r0;
  for (; r + 4 <= r1; r += 4) tile<4, C>(a, w, a.x + r * a.in, a.y + r * a.out, o);
  for (; r < r1; ++r) tile<1, C>(a, w, a.x + r * a.in, a.y + r * a.out, o);
}

// The c (<= C) weight rows at w against token rows [r0, r1).
template <int C, typename W>
void group_against(const LinearArgs& a, const W* w, std::int64_t c, std::int64_t r0, std::int64_t r1,
                   std::int64_t o) {
  if (c == C) {
    rows_against<C>(a, w, r0, r1, o);
  } else {
    for (std::int64_t k = 0; k < c; ++k) rows_against<1>(a, w + k * a.in, r0, r1, o + k);
  }
}

// Bytes of token rows kept in cache while every weight row of the share streams past them: half
// of a 1 MiB L2, leaving room for the decoded or widened weight rows.
constexpr std::int64_t kRowBlockBytes = std::int64_t(512) << 10;

// f64 and f32 rows are read where they are stored; quantized rows are decoded to f32 and f16/bf16
// rows widened to f64, C rows at a time, into a buffer the tile then reads.
template <int C>
void columns(const LinearArgs& a, std::int64_t o_begin, std::int64_t o_end) {
  const std::int64_t in = a.in;
  const std::int64_t block =
      std::max<std::int64_t>(4, (kRowBlockBytes / std::max<std::int64_t>(1, in * 8)) & ~std::int64_t(3));
  const bool widened = !a.q && (a.wtype == DType::f16 || a.wtype == DType::bf16);
  std::vector<double> wide(widened ? std::size_t(C * in) : 0);
  std::vector<float> decoded(a.q ? std::size_t(C * in) : 0);
  for (std::int64_t r0 = 0; r0 < a.rows; r0 += block) {
    const std::int64_t r1 = std::min(a.rows, r0 + block);
    for (std::int64_t o = o_begin; o < o_end;) {
      const std::int64_t c = std::min<std::int64_t>(C, o_end - o);
      if (a.q) {
        for (std::int64_t k = 0; k < c; ++k) a.q->row(o + k, decoded.data() + k * in);
        group_against<C>(a, decoded.data(), c, r0, r1, o);
      } else if (widened) {
        widen_rows(a, o, c, wide.data());
        group_against<C>(a, wide.data(), c, r0, r1, o);
      } else if (a.wtype == DType::f32) {
        group_against<C>(a, static_cast<const float*>(a.w) + o * in, c, r0, r1, o);
      } else {
        group_against<C>(a, static_cast<const double*>(a.w) + o * in, c, r0, r1, o);
      }
      o += c;
    }
  }
}

}  // namespace

void DS_LINEAR_CAT(linear_cols_, DS_LINEAR_ISA)(const LinearArgs& a, std::int64_t o_begin,
                                                std::int64_t o_end) {
  // A decode step has one row: four weight rows at once keep four add chains busy. With four
  // rows or more, two weight rows by four token rows are eight chains.
  if (a.rows < 4)
    columns<4>(a, o_begin, o_end);
  else
    columns<2>(a, o_begin, o_end);
}

}  // namespace ds::ref::detail
