// One block of the f32 compare loop in kLanes independent lanes (see scan_lanes.h): lane j sees
// the elements j, j+kLanes, j+2*kLanes, ... of the block. The lanes are GCC vector types, so the
// accumulators stay in registers and the whole loop is SIMD without -ffast-math.
//
// Compiled once per ISA with DS_LANES_ISA naming the namespace and DS_LANES_WIDTH its f64 vector
// width; -ffp-contract=off keeps wide builds from fusing multiply-adds. Only builtins below: an
// inline library function used here could be emitted out of line with AVX instructions and then
// picked by the linker for the baseline build too.
#include "scan_lanes.h"

#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef DS_LANES_ISA
#error "compile scan_lanes.cpp with -DDS_LANES_ISA=<namespace>"
#endif

namespace ds::lanes::DS_LANES_ISA {

namespace {

// The lane count is the ISA's natural f64 vector width: a vector type wider than the registers
// is lowered element by element (ten times slower). Results differ across widths only in the
// rounding of the sums (summation order); counts, maxima and indices are the same everywhere.
//
// Each iteration takes 2 * kLanes elements: the f64 metrics run twice on kLanes-wide halves
// (lane j still sees j, j+kLanes, j+2*kLanes, ... in order), while the integer ULP work runs
// once on a full-width vector of 2 * kLanes int32 lanes, halving its share of the vector ports.
constexpr int kLanes = DS_LANES_WIDTH;
constexpr int kStep = 2 * kLanes;
typedef float fv __attribute__((vector_size(4 * kLanes)));         // kLanes f32
typedef float fw __attribute__((vector_size(4 * kStep)));          // kStep f32
typedef std::int32_t iw __attribute__((vector_size(4 * kStep)));   // kStep i32
typedef std::uint32_t uw __attribute__((vector_size(4 * kStep)));  // kStep u32
typedef double dv __attribute__((vector_size(8 * kLanes)));        // kLanes f64
typedef std::int64_t lv __attribute__((vector_size(8 * kLanes)));  // kLanes i64

constexpr double kTiny = 2.2250738585072014e-308;  // smallest normal double
constexpr double kMax = 1.7976931348623157e308;    // largest finite double
constexpr int kPrefetchAhead = 1024;               // elements

// kLanes values widened to f64. GCC 12 splits a widening __builtin_convertvector into halves and
// re-joins them; the single instruction is named instead (intrinsics are always inlined, never
// emitted out of line).
inline void load_f64(const float* p, dv& out) {
  fv narrow;
  __builtin_memcpy(&narrow, p, sizeof narrow);
#if defined(__AVX512F__) && DS_LANES_WIDTH == 8
  // (maskz with a full mask: GCC 12's unmasked form trips -Wuninitialized in its own header)
  out = (dv)_mm512_maskz_cvtps_pd(__mmask8(0xff), (__m256)narrow);
#elif defined(__AVX__) && DS_LANES_WIDTH == 4
  out = (dv)_mm256_cvtps_pd((__m128)narrow);
#else
  out = __builtin_convertvector(narrow, dv);
#endif
}
inline void load_f64(const double* p, dv& out) { __builtin_memcpy(&out, p, sizeof out); }

// kStep values as f32, whose bits give the ULP distance.
inline void load_f32(const float* p, const dv&, const dv&, fw& out) { __builtin_memcpy(&out, p, sizeof out); }
template <int... I>
inline void join(const fv& a, const fv& b, fw& out, std::integer_sequence<int, I...>) {
  out = __builtin_shufflevector(a, b, I...);
}
inline void load_f32(const double*, const dv& lo, const dv& hi, fw& out) {
  join(__builtin_convertvector(lo, fv), __builtin_convertvector(hi, fv), out,
       std::make_integer_sequence<int, kStep>{});
}

// The f32 values' positions on the integer line (neighbours differ by 1, -0 == +0).
inline void ordered(const fw& v, iw& out) {
  const iw bits = (iw)v;
  out = (iw)(bits < 0 ? 0x80000000u - (uw)bits : (uw)bits);  // sign-magnitude to two's complement
}

// acc += a * b, fused where the ISA has it: only sums use this (their rounding may differ
// between ISAs anyway); tolerance arithmetic stays unfused to match the element path exactly.
inline void add_product(dv& acc, const dv& a, const dv& b) {
#if defined(__AVX512F__) && DS_LANES_WIDTH == 8
  acc = (dv)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)acc);
#elif defined(__FMA__) && DS_LANES_WIDTH == 4
  acc = (dv)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)acc);
#else
  acc += a * b;
#endif
}

// Per-lane f64 accumulators (kept in registers once inlined).
struct Wide {
  dv sum_abs, sum_d2, sum_r2, sum_c2, sum_rc, max_abs, max_rel, min_atol, min_rtol;
  lv mismatches, odd;  // odd: lanes that saw a NaN, an Inf or a subnormal f64 reference
};

template <class R, class C>
__attribute__((always_inline)) inline void wide_metrics(const dv& r, const dv& c, double atol, double rtol,
                                                        Wide& w) {
  const lv no_sign = lv{} + 0x7fffffffffffffffll;
  const dv d = (dv)((lv)(c - r) & no_sign), mag = (dv)((lv)r & no_sign);
  // A NaN or Inf on either side makes d NaN or Inf (NaN compares false). A subnormal f64
  // reference goes to the element path, which divides by it exactly where this loop multiplies
  // by 1/tiny.
  w.odd |= ~(d <= kMax);
  if constexpr (sizeof(R) == 8) w.odd |= (mag < kTiny) & (mag != 0);
  // Written as selects so that AVX-512 adds under a compare mask instead of materialising it.
  w.mismatches = d > atol + rtol * mag ? w.mismatches + 1 : w.mismatches;
  w.max_abs = d > w.max_abs ? d : w.max_abs;
  // One division serves both relative quantities; mag is 0 or >= tiny here. On a zero reference
  // the relative error uses 1/tiny (as the element path does) and the needed rtol is
  // (d - atol) * inf: +inf when d > atol, as it must be, and -inf or NaN otherwise, which the
  // `>` below never takes.
  const dv inv = 1.0 / mag;
  const dv rel = d * (mag == 0 ? dv{} + 1 / kTiny : inv);
  w.max_rel = rel > w.max_rel ? rel : w.max_rel;
  const dv need_atol = d - rtol * mag;
  w.min_atol = need_atol > w.min_atol ? need_atol : w.min_atol;
  const dv need_rtol = (d - atol) * inv;
  w.min_rtol = need_rtol > w.min_rtol ? need_rtol : w.min_rtol;
  w.sum_abs += d;
  add_product(w.sum_d2, d, d);
  add_product(w.sum_r2, r, r);
  add_product(w.sum_c2, c, c);
  add_product(w.sum_rc, r, c);
}

template <class R, class C>
bool scan(const R* ref, const C* cand, double atol, double rtol, BlockTotals& out) {
  Wide w = {};
  iw max_ulp = {}, sum_ulp_lo = {}, sum_ulp_hi = {};
  iw above0 = {}, above1 = {}, above2 = {}, above3 = {}, above4 = {}, above5 = {};
  for (int i = 0; i < kLaneBlock; i += kStep) {
    // The loop computes for longer than the hardware prefetcher looks ahead; asking for the
    // data a few KiB early keeps the streams from stalling (a prefetch never faults).
    __builtin_prefetch(ref + i + kPrefetchAhead);
    __builtin_prefetch(cand + i + kPrefetchAhead);
    dv r0, r1, c0, c1;
    load_f64(ref + i, r0);
    load_f64(ref + i + kLanes, r1);
    load_f64(cand + i, c0);
    load_f64(cand + i + kLanes, c1);
    wide_metrics<R, C>(r0, c0, atol, rtol, w);
    wide_metrics<R, C>(r1, c1, atol, rtol, w);

    fw rf, cf;
    load_f32(ref + i, r0, r1, rf);
    load_f32(cand + i, c0, c1, cf);
    iw a, b;
    ordered(rf, a);
    ordered(cf, b);
    const uw diff = (uw)a - (uw)b;
    const uw ulp = a > b ? diff : -diff;
#if defined(__AVX512F__)
    const uw edge = ulp;  // AVX-512 compares unsigned integers directly
#else
    // Capped at 65536 (above every bucket edge) the distance compares as a signed integer.
    const iw edge = (iw)(ulp < 65536u ? ulp : uw{} + 65536u);
#endif
    above0 = edge > 0 ? above0 + 1 : above0;
    above1 = edge > 1 ? above1 + 1 : above1;
    above2 = edge > 3 ? above2 + 1 : above2;
    above3 = edge > 15 ? above3 + 1 : above3;
    above4 = edge > 255 ? above4 + 1 : above4;
    above5 = edge > 65535 ? above5 + 1 : above5;
    // Split in 16-bit halves, the sum cannot overflow 32 bits within a block.
    max_ulp = (iw)((uw)max_ulp > ulp ? (uw)max_ulp : ulp);
    sum_ulp_lo += (iw)(ulp & 0xffffu);
    sum_ulp_hi += (iw)(ulp >> 16);
  }

  for (int j = 0; j < kLanes; ++j)
    if (w.odd[j]) return false;
  out = BlockTotals{};
  for (int j = 0; j < kLanes; ++j) {
    out.sum_abs += w.sum_abs[j];
    out.sum_d2 += w.sum_d2[j];
    out.sum_r2 += w.sum_r2[j];
    out.sum_c2 += w.sum_c2[j];
    out.sum_rc += w.sum_rc[j];
    out.max_abs = w.max_abs[j] > out.max_abs ? w.max_abs[j] : out.max_abs;
    out.max_rel = w.max_rel[j] > out.max_rel ? w.max_rel[j] : out.max_rel;
    out.min_atol = w.min_atol[j] > out.min_atol ? w.min_atol[j] : out.min_atol;
    out.min_rtol = w.min_rtol[j] > out.min_rtol ? w.min_rtol[j] : out.min_rtol;
    out.mismatches += w.mismatches[j];
  }
  for (int j = 0; j < kStep; ++j) {
    const double lane_max = double(std::uint32_t(max_ulp[j]));
    out.max_ulp = lane_max > out.max_ulp ? lane_max : out.max_ulp;
    out.sum_ulp += std::int64_t(sum_ulp_lo[j]) + (std::int64_t(sum_ulp_hi[j]) << 16);
    out.above[0] += above0[j];
    out.above[1] += above1[j];
    out.above[2] += above2[j];
    out.above[3] += above3[j];
    out.above[4] += above4[j];
    out.above[5] += above5[j];
  }
  return true;
}

}  // namespace

bool scan_block_f32(const float* ref, const float* cand, double atol, double rtol, BlockTotals& out) {
  return scan(ref, cand, atol, rtol, out);
}
bool scan_block_f32(const double* ref, const float* cand, double atol, double rtol, BlockTotals& out) {
  return scan(ref, cand, atol, rtol, out);
}
bool scan_block_f32(const float* ref, const double* cand, double atol, double rtol, BlockTotals& out) {
  return scan(ref, cand, atol, rtol, out);
}
bool scan_block_f32(const double* ref, const double* cand, double atol, double rtol, BlockTotals& out) {
  return scan(ref, cand, atol, rtol, out);
}

}  // namespace ds::lanes::DS_LANES_ISA
