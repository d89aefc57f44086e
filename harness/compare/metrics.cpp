#include "metrics.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>

#include "scan_lanes.h"

namespace ds {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Maps a value of dtype t to an integer whose order matches the float order, so that
// neighbouring representable values differ by exactly 1 (and -0 maps onto +0).
// Branch-free: the sign of real data is random, so a branch here would mispredict half the time.
inline std::int64_t from_sign_magnitude(std::int64_t bits, int width) {
  const std::int64_t magnitude = bits & ((std::int64_t(1) << (width - 1)) - 1);
  const std::int64_t neg = -((bits >> (width - 1)) & 1);  // 0 or -1
  return (magnitude ^ neg) - neg;
}

template <DType T>
inline std::int64_t ordered(double v) {
  if constexpr (T == DType::f16)
    return from_sign_magnitude(f64_to_f16(v), 16);
  else if constexpr (T == DType::bf16)
    return from_sign_magnitude(f64_to_bf16(v), 16);
  else if constexpr (T == DType::f32)
    return from_sign_magnitude(std::bit_cast<std::uint32_t>(float(v)), 32);
  else {
    const auto b = std::bit_cast<std::int64_t>(v);
    return b < 0 ? std::numeric_limits<std::int64_t>::min() - b : b;
  }
}

template <DType T>
inline double ulp_of(double a, double b) {
  if constexpr (T == DType::i32)
    return std::fabs(std::nearbyint(a) - std::nearbyint(b));
  else
    // f64 differences can overflow int64; go through double (rounding is fine this far out).
    return std::fabs(double(ordered<T>(a)) - double(ordered<T>(b)));
}

// The bucket of an ULP distance, branch-free: honest rounding noise scatters over buckets 0-2
// at random, which would mispredict a chain of ifs on most elements.
inline int bucket_of(double ulp) {
  return int(ulp > 0) + int(ulp > 1) + int(ulp > 3) + int(ulp > 15) + int(ulp > 255) + int(ulp > 65535) +
         int(!(ulp < kInf));
}

// What one chunk contributes; merged in chunk order.
struct Partial {
  std::int64_t nan_ref = 0, nan_cand = 0, inf_ref = 0, inf_cand = 0, first_nan = -1;
  bool inf_agree = true;
  std::int64_t mismatches = 0, first_mismatch = -1;
  double first_ref = Metrics::nan, first_cand = Metrics::nan;
  double max_abs = -1;
  std::int64_t max_abs_index = -1;
  double max_abs_ref = Metrics::nan, max_abs_cand = Metrics::nan;
  double max_rel = 0, max_ulp = 0, min_atol = 0, min_rtol = 0;
  double sum_abs = 0, sum_d2 = 0, sum_r2 = 0, sum_c2 = 0, sum_rc = 0, sum_ulp = 0;
  std::int64_t finite_pairs = 0;
  std::array<std::int64_t, kUlpBuckets> hist{};
};

// The element loop. The finite/finite case is the hot path; NaN and Inf take a cold branch.
template <class R, class C, DType T>
void scan(const R* ref, const C* cand, std::int64_t begin, std::int64_t end, Tolerance tol, Partial& out) {
  constexpr double tiny = std::numeric_limits<double>::min();
  // A local copy: the accumulators stay in registers instead of being reloaded after every
  // store (the compiler cannot prove `out` does not alias the input arrays).
  Partial p = out;
  std::int64_t above[kUlpBuckets - 2] = {};
  const std::int64_t finite_before = p.finite_pairs;
  for (std::int64_t i = begin; i < end; ++i) {
    const double r = double(ref[i]), c = double(cand[i]);
    const double d = std::fabs(c - r);
    if (!std::isfinite(r) || !std::isfinite(c)) [[unlikely]] {
      const bool rn = std::isnan(r), cn = std::isnan(c), ri = std::isinf(r), ci = std::isinf(c);
      p.nan_ref += rn;
      p.nan_cand += cn;
      p.inf_ref += ri;
      p.inf_cand += ci;
      if ((rn || cn) && p.first_nan < 0) p.first_nan = i;
      // Matching infinities are equal: exact, and kept out of the sums so that no error metric
      // becomes inf - inf = NaN (a NaN compares false against every threshold and could pass).
      if (ri && ci && r == c) {
        ++p.hist[0];
        continue;
      }
      if ((ri || ci) && !(rn || cn)) p.inf_agree = false;
      ++p.mismatches;
      if (p.first_mismatch < 0) {
        p.first_mismatch = i;
        p.first_ref = r;
        p.first_cand = c;
      }
      ++p.hist[kUlpBuckets - 1];
      continue;
    }
    const double mag = std::fabs(r);
    if (!(d <= tol.atol + tol.rtol * mag)) {
      ++p.mismatches;
      if (p.first_mismatch < 0) {
        p.first_mismatch = i;
        p.first_ref = r;
        p.first_cand = c;
      }
    }
    const double ulp = ulp_of<T>(r, c);
    // Counts above each bucket edge in registers (bucket k = above[k-1] - above[k], folded in at
    // the end): a histogram increment per element would chain every element through memory.
    above[0] += ulp > 0;
    above[1] += ulp > 1;
    above[2] += ulp > 3;
    above[3] += ulp > 15;
    above[4] += ulp > 255;
    above[5] += ulp > 65535;
    if (d > p.max_abs) [[unlikely]] {
      p.max_abs = d;
      p.max_abs_index = i;
      p.max_abs_ref = r;
      p.max_abs_cand = c;
    }
    // Plain comparisons rather than std::fmax (a libm call): everything here is finite.
    // One division per element: both relative quantities share the reciprocal.
    const double inv = 1.0 / (mag > tiny ? mag : tiny);
    const double rel = d * inv;
    p.max_rel = rel > p.max_rel ? rel : p.max_rel;
    p.max_ulp = ulp > p.max_ulp ? ulp : p.max_ulp;
    p.sum_ulp += ulp;
    // Minimum tolerances: the atol that passes with this rtol, and vice versa.
    const double need_atol = d - tol.rtol * mag;
    p.min_atol = need_atol > p.min_atol ? need_atol : p.min_atol;
    if (mag > 0) {
      const double need_rtol = mag >= tiny ? (d - tol.atol) * inv : (d - tol.atol) / mag;
      p.min_rtol = need_rtol > p.min_rtol ? need_rtol : p.min_rtol;
    } else if (d > tol.atol) {
      p.min_rtol = kInf;
    }
    p.sum_abs += d;
    p.sum_d2 += d * d;
    p.sum_r2 += r * r;
    p.sum_c2 += c * c;
    p.sum_rc += r * c;
    ++p.finite_pairs;
  }
  const std::int64_t finite = p.finite_pairs - finite_before;
  p.hist[0] += finite - above[0];
  for (int k = 1; k < kUlpBuckets - 2; ++k) p.hist[std::size_t(k)] += above[k - 1] - above[k];
  p.hist[kUlpBuckets - 2] += above[kUlpBuckets - 3];
  out = p;
}

void merge(Partial& a, const Partial& b) {
  a.nan_ref += b.nan_ref;
  a.nan_cand += b.nan_cand;
  a.inf_ref += b.inf_ref;
  a.inf_cand += b.inf_cand;
  if (a.first_nan < 0) a.first_nan = b.first_nan;
  a.inf_agree = a.inf_agree && b.inf_agree;
  a.mismatches += b.mismatches;
  if (a.first_mismatch < 0 && b.first_mismatch >= 0) {
    a.first_mismatch = b.first_mismatch;
    a.first_ref = b.first_ref;
    a.first_cand = b.first_cand;
  }
  if (b.max_abs > a.max_abs) {  // ties keep the earlier index
    a.max_abs = b.max_abs;
    a.max_abs_index = b.max_abs_index;
    a.max_abs_ref = b.max_abs_ref;
    a.max_abs_cand = b.max_abs_cand;
  }
  a.max_rel = std::fmax(a.max_rel, b.max_rel);
  a.max_ulp = std::fmax(a.max_ulp, b.max_ulp);
  a.min_atol = std::fmax(a.min_atol, b.min_atol);
  a.min_rtol = std::fmax(a.min_rtol, b.min_rtol);
  a.sum_abs += b.sum_abs;
  a.sum_d2 += b.sum_d2;
  a.sum_r2 += b.sum_r2;
  a.sum_c2 += b.sum_c2;
  a.sum_rc += b.sum_rc;
  a.sum_ulp += b.sum_ulp;
  a.finite_pairs += b.finite_pairs;
  for (int i = 0; i < kUlpBuckets; ++i) a.hist[std::size_t(i)] += b.hist[std::size_t(i)];
}

template <class R, class C>
using LaneKernel = bool (*)(const R*, const C*, double, double, lanes::BlockTotals&);

// The lane kernel a path asks for; nullptr for `scalar` or a build this CPU cannot run.
// `fastest` is the widest build the CPU runs.
template <class R, class C>
LaneKernel<R, C> lane_kernel(ScanPath path) {
  if (!scan_path_supported(path) || path == ScanPath::scalar) return nullptr;
#if defined(DS_LANES_X86)
  // The CPU does not change under us: ask it once.
  static const ScanPath widest = scan_path_supported(ScanPath::lanes_avx512) ? ScanPath::lanes_avx512
                                 : scan_path_supported(ScanPath::lanes_avx2) ? ScanPath::lanes_avx2
                                                                             : ScanPath::lanes_baseline;
  if (path == ScanPath::fastest) path = widest;
  if (path == ScanPath::lanes_avx512) return lanes::avx512::scan_block_f32;
  if (path == ScanPath::lanes_avx2) return lanes::avx2::scan_block_f32;
#endif
  return lanes::baseline::scan_block_f32;
}

// Folds a lane-scanned block into the chunk's partial, as the partial of that block alone. The
// two metrics that carry an index (first mismatch, max |diff|) are found again element by element
// in the block, which happens only when the block holds the first mismatch or a new maximum.
template <class R, class C>
void fold(const R* ref, const C* cand, std::int64_t begin, Tolerance tol, const lanes::BlockTotals& t,
          Partial& p) {
  const std::int64_t end = begin + lanes::kLaneBlock;
  auto diff = [&](std::int64_t i) { return std::fabs(double(cand[i]) - double(ref[i])); };
  Partial block;
  block.mismatches = t.mismatches;
  if (t.mismatches > 0 && p.first_mismatch < 0) {
    for (std::int64_t i = begin; i < end; ++i)
      if (!(diff(i) <= tol.atol + tol.rtol * std::fabs(double(ref[i])))) {
        block.first_mismatch = i;
        block.first_ref = double(ref[i]);
        block.first_cand = double(cand[i]);
        break;
      }
  }
  block.max_abs = t.max_abs;
  if (t.max_abs > p.max_abs) {
    for (std::int64_t i = begin; i < end; ++i)
      if (diff(i) == t.max_abs) {
        block.max_abs_index = i;
        block.max_abs_ref = double(ref[i]);
        block.max_abs_cand = double(cand[i]);
        break;
      }
  }
  block.max_rel = t.max_rel;
  block.max_ulp = t.max_ulp;
  block.min_atol = t.min_atol;
  block.min_rtol = t.min_rtol;
  block.sum_abs = t.sum_abs;
  block.sum_d2 = t.sum_d2;
  block.sum_r2 = t.sum_r2;
  block.sum_c2 = t.sum_c2;
  block.sum_rc = t.sum_rc;
  block.sum_ulp = double(t.sum_ulp);
  block.finite_pairs = lanes::kLaneBlock;
  block.hist[0] = lanes::kLaneBlock - t.above[0];
  for (int k = 1; k < lanes::kAboveEdges; ++k) block.hist[std::size_t(k)] = t.above[k - 1] - t.above[k];
  block.hist[lanes::kAboveEdges] = t.above[lanes::kAboveEdges - 1];
  merge(p, block);
}

// One chunk: whole blocks through the lane kernel where it applies (f32 storage, finite data),
// everything else element by element.
template <class R, class C, DType T>
void scan_chunk(const R* ref, const C* cand, std::int64_t begin, std::int64_t end, Tolerance tol,
                ScanPath path, Partial& p) {
  if constexpr (T == DType::f32) {
    if (const LaneKernel<R, C> kernel = lane_kernel<R, C>(path)) {
      lanes::BlockTotals t;
      for (; begin + lanes::kLaneBlock <= end; begin += lanes::kLaneBlock) {
        if (kernel(ref + begin, cand + begin, tol.atol, tol.rtol, t))
          fold(ref, cand, begin, tol, t, p);
        else
          scan<R, C, T>(ref, cand, begin, begin + lanes::kLaneBlock, tol, p);
      }
    }
  }
  scan<R, C, T>(ref, cand, begin, end, tol, p);
}

// Fixed chunking (independent of the thread count) is what makes the merge deterministic.
constexpr std::int64_t kChunk = std::int64_t(1) << 16;

template <class R, class C, DType T>
Partial scan_all(const R* ref, const C* cand, std::int64_t n, Tolerance tol, int threads, ScanPath path) {
  const std::int64_t chunks = std::max<std::int64_t>(1, (n + kChunk - 1) / kChunk);
  std::vector<Partial> parts(static_cast<std::size_t>(chunks));
  auto work = [&](std::int64_t k) {
    scan_chunk<R, C, T>(ref, cand, k * kChunk, std::min(n, (k + 1) * kChunk), tol, path,
                        parts[std::size_t(k)]);
  };
  int nt = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  nt = int(std::min<std::int64_t>(nt, chunks));
  if (nt <= 1) {
    for (std::int64_t k = 0; k < chunks; ++k) work(k);
  } else {
    std::atomic<std::int64_t> next{0};
    std::vector<std::jthread> pool;
    for (int t = 0; t < nt; ++t)
      pool.emplace_back([&] {
        for (std::int64_t k; (k = next.fetch_add(1)) < chunks;) work(k);
      });
  }
  Partial total = parts[0];
  for (std::size_t k = 1; k < parts.size(); ++k) merge(total, parts[k]);
  return total;
}

template <class R, class C>
Partial dispatch_dtype(const R* ref, const C* cand, std::int64_t n, DType t, Tolerance tol, int threads,
                       ScanPath path) {
  switch (t) {
    case DType::f16: return scan_all<R, C, DType::f16>(ref, cand, n, tol, threads, path);
    case DType::bf16: return scan_all<R, C, DType::bf16>(ref, cand, n, tol, threads, path);
    case DType::f32: return scan_all<R, C, DType::f32>(ref, cand, n, tol, threads, path);
    case DType::f64: return scan_all<R, C, DType::f64>(ref, cand, n, tol, threads, path);
    case DType::i32: return scan_all<R, C, DType::i32>(ref, cand, n, tol, threads, path);
  }
  throw std::invalid_argument("compute_metrics: unknown dtype");
}

// Contiguous f64 or f32 data in place; anything else widened to an f64 copy kept in `keep`.
struct Flat {
  const double* f64 = nullptr;
  const float* f32 = nullptr;
  Tensor keep;
};

Flat flat(const TensorView& v) {
  Flat f;
  if (v.contiguous() && v.dtype() == DType::f64)
    f.f64 = reinterpret_cast<const double*>(v.raw());
  else if (v.contiguous() && v.dtype() == DType::f32)
    f.f32 = reinterpret_cast<const float*>(v.raw());
  else {
    f.keep = Tensor::from_view(v, DType::f64);
    f.f64 = f.keep.data<double>();
  }
  return f;
}

}  // namespace

bool scan_path_supported(ScanPath path) {
  switch (path) {
    case ScanPath::fastest:
    case ScanPath::scalar:
    case ScanPath::lanes_baseline: return true;
    case ScanPath::lanes_avx2:
#if defined(DS_LANES_X86)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
    case ScanPath::lanes_avx512:
#if defined(DS_LANES_X86)
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
#else
      return false;
#endif
  }
  return false;
}

double ulp_distance(DType t, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kInf;
  switch (t) {
    case DType::f16: return ulp_of<DType::f16>(a, b);
    case DType::bf16: return ulp_of<DType::bf16>(a, b);
    case DType::f32: return ulp_of<DType::f32>(a, b);
    case DType::f64: return ulp_of<DType::f64>(a, b);
    case DType::i32: return ulp_of<DType::i32>(a, b);
  }
  return kInf;
}

int ulp_bucket(double ulp) { return std::isnan(ulp) ? kUlpBuckets - 1 : bucket_of(ulp); }

Metrics compute_metrics(const TensorView& ref, const TensorView& cand, DType cand_dtype, Tolerance tol,
                        int threads, ScanPath path) {
  if (ref.numel() != cand.numel()) throw std::invalid_argument("compute_metrics: element counts differ");
  Metrics m;
  m.numel = ref.numel();
  m.atol = tol.atol;
  m.rtol = tol.rtol;
  if (m.numel == 0) return m;
  const Flat r = flat(ref), c = flat(cand);
  const std::int64_t n = m.numel;
  Partial p;
  if (r.f64 && c.f64)
    p = dispatch_dtype(r.f64, c.f64, n, cand_dtype, tol, threads, path);
  else if (r.f64 && c.f32)
    p = dispatch_dtype(r.f64, c.f32, n, cand_dtype, tol, threads, path);
  else if (r.f32 && c.f32)
    p = dispatch_dtype(r.f32, c.f32, n, cand_dtype, tol, threads, path);
  else
    p = dispatch_dtype(r.f32, c.f64, n, cand_dtype, tol, threads, path);

  m.nan_ref = p.nan_ref;
  m.nan_cand = p.nan_cand;
  m.inf_ref = p.inf_ref;
  m.inf_cand = p.inf_cand;
  m.first_nan = p.first_nan;
  m.inf_agree = p.inf_agree;
  m.mismatches = p.mismatches;
  m.first_mismatch = p.first_mismatch;
  m.first_ref = p.first_ref;
  m.first_cand = p.first_cand;
  m.ulp_hist = p.hist;
  m.max_abs = std::max(p.max_abs, 0.0);
  m.max_abs_index = p.max_abs_index;
  m.max_abs_ref = p.max_abs_ref;
  m.max_abs_cand = p.max_abs_cand;
  m.max_rel = p.max_rel;
  m.max_ulp = p.max_ulp;
  const double fp = double(std::max<std::int64_t>(p.finite_pairs, 1));
  m.mean_abs = p.sum_abs / fp;
  m.rms = std::sqrt(p.sum_d2 / fp);
  m.ref_rms = std::sqrt(p.sum_r2 / fp);
  m.mean_ulp = p.sum_ulp / fp;
  m.min_atol = std::fmax(p.min_atol, 0.0);
  m.min_rtol = std::fmax(p.min_rtol, 0.0);
  if (p.sum_r2 == 0 && p.sum_c2 == 0)
    m.cosine = 1;
  else if (p.sum_r2 == 0 || p.sum_c2 == 0)
    m.cosine = 0;
  else
    m.cosine = p.sum_rc / std::sqrt(p.sum_r2 * p.sum_c2);
  m.nmse = p.sum_r2 > 0 ? p.sum_d2 / p.sum_r2 : (p.sum_d2 > 0 ? kInf : 0);
  m.sqnr_db = p.sum_d2 > 0 ? 10 * std::log10(p.sum_r2 / p.sum_d2) : kInf;
  // Non-finite disagreements poison the error metrics on purpose, towards failing: a NaN pair
  // makes max |diff| NaN (every `<=` predicate is then false), an unmatched Inf makes it inf.
  const std::int64_t nonfinite_bad = p.hist[kUlpBuckets - 1];
  if (nonfinite_bad > 0) {
    m.max_ulp = kInf;
    m.min_atol = m.min_rtol = kInf;
    m.nmse = kInf;
    m.sqnr_db = -kInf;
    m.cosine = Metrics::nan;
    m.max_abs = (m.nan_ref || m.nan_cand) ? Metrics::nan : kInf;
    m.max_rel = m.max_abs;
  }
  return m;
}

double rms(const TensorView& x) {
  double s = 0;
  for (std::int64_t i = 0, n = x.numel(); i < n; ++i) s += x.at(i) * x.at(i);
  return x.numel() ? std::sqrt(s / double(x.numel())) : 0.0;
}

std::vector<double> per_row_relative_error(const TensorView& ref, const TensorView& cand) {
  std::vector<double> out;
  if (ref.rank() != 2 || ref.numel() != cand.numel()) return out;
  const std::int64_t rows = ref.dim(0), cols = ref.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    double d2 = 0, r2 = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double a = ref.at(r * cols + c), b = cand.at(r * cols + c);
      d2 += (b - a) * (b - a);
      r2 += a * a;
    }
    out.push_back(r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2));
  }
  return out;
}

std::uint64_t content_hash(const Tensor& t) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const std::byte* p = t.raw();
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    h ^= std::uint64_t(p[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace ds
