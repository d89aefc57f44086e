// Over 600 lines on purpose: one flat catalogue of a case per kernel (inputs, bytes, host check), read case
// by case. bench/kernels: one Google Benchmark case per kernel of dsk::KernelTable (kernels/*.cu), at the
// shapes of shapes.h, for decode (one token) and prefill.
//
// At decode every one of these kernels is memory bound, so each case reports
//   bytes       the fewest bytes the launch must move: each input read once, each output
//               written once, in-place buffers counted both ways;
//   GB/s        bytes over the time of one launch;
//   peak_ratio  (cuda only) GB/s over the device's peak DRAM bandwidth, from its memory clock
//               and bus width.
// On cuda each launch is timed alone with cudaEvents after a write larger than L2, so its
// inputs come from DRAM, as a decode step's weights do. Decode-sized norms and element-wise
// kernels move a few KB: their time is launch latency, and their ratio near 0 says nothing
// about the kernel. Prefill projections re-read each weight row once per token through L2,
// so their ratio can pass 1.
//
// Before it is timed, every case runs once and compares a sample of its outputs with a host
// computation in double: a mismatch fails the case and makes the exit status 1, which is
// what makes the simt run a test (bench.kernels_smoke).
//
//   bench_kernels --benchmark_filter=^cuda/    real shapes on the GPU
//   bench_kernels --benchmark_filter=^simt/    tiny presets on CPU fibers
//   bench_kernels --mutant=NAME ...            mutant NAME's table (kernels/mutants/): checks fail
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dtype.h"
#include "tensor.h"
#include "kernels.h"
#include "loaders/quant.h"
#include "mutants/mutants.h"
#include "shapes.h"
#if defined(DS_BENCH_CUDA)
#include "cuda_timer.h"
#endif

namespace dsb {
namespace {

// ----------------------------------------------------------------------------------------
// Device buffers and the values they hold

using ds::DType;

// Projection weights in bf16, as the HF checkpoints of these models store them.
constexpr DType kWeight = DType::bf16;
constexpr dsk::WType kWType = dsk::WType::bf16;

// One device allocation and, in `host`, the values it was filled with as the kernel reads
// them (already rounded to `elem`). Token ids and slot ids are small enough to be exact floats.
struct Buf {
  DType elem;
  std::size_t n;
  void* dev;
  std::vector<float> host;
  std::size_t stored = 0;  // a block-quantized matrix's bytes (elem is then not its element)
  std::size_t bytes() const { return stored != 0 ? stored : n * ds::dtype_size(elem); }
  template <class T>
  T* as() const {
    return static_cast<T*>(dev);
  }
};

// Owns every allocation of one case, through the table (cudaMalloc or host memory).
class Arena {
 public:
  explicit Arena(const dsk::KernelTable& table) : k(table) {}
  ~Arena() {
    for (Buf& b : bufs_) k.release(b.dev);
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  std::vector<float> uniform(std::size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }

  Buf& upload(DType e, std::vector<float> v) {
    ds::Tensor stored(e, {std::int64_t(v.size())});
    for (std::size_t i = 0; i < v.size(); ++i) {
      stored.set(std::int64_t(i), v[i]);
      v[i] = static_cast<float>(stored.at(std::int64_t(i)));
    }
    Buf& b = alloc(e, v.size());
    k.to_device(b.dev, stored.raw(), stored.nbytes());
    b.host = std::move(v);
    return b;
  }

  // A matrix as a GGUF stores it in block type t (the writer's round-to-nearest blocks), read by the
  // kernels as they are; `host` holds the values its blocks decode to.
  Buf& upload_quant(ds::ref::GgmlType t, std::vector<float> v) {
    const std::vector<std::byte> blocks = ds::ref::quantize_blocks(t, v.data(), std::int64_t(v.size()));
    ds::ref::dequantize(t, blocks.data(), v.data(), std::int64_t(v.size()));
    Buf& b =
        bufs_.emplace_back(Buf{DType::f32, v.size(), k.alloc(blocks.size()), std::move(v), blocks.size()});
    k.to_device(b.dev, blocks.data(), blocks.size());
    return b;
  }

  // An output: never filled (the simt runtime fills fresh memory with NaN, so an element the
  // kernel skips fails the check).
  Buf& alloc(DType e, std::size_t n) {
    return bufs_.emplace_back(Buf{e, n, k.alloc(n * ds::dtype_size(e)), {}});
  }

  std::vector<float> read(const Buf& b) const {
    ds::Tensor got(b.elem, {std::int64_t(b.n)});
    k.to_host(got.raw(), b.dev, got.nbytes());
    std::vector<float> v(b.n);
    for (std::size_t i = 0; i < b.n; ++i) v[i] = static_cast<float>(got.at(std::int64_t(i)));
    return v;
  }

  const dsk::KernelTable& k;

 private:
  std::deque<Buf> bufs_;  // a deque: the launch and check closures hold references into it
  std::mt19937 rng_{20260519};
};

// ----------------------------------------------------------------------------------------
// A case: the launch it times, the bytes it must move, the outputs it checks once

// Output `out` must equal expect(i), the host computation of flat element i.
struct Check {
  std::string what;
  const Buf* out;
  std::function<double(std::size_t)> expect;
};

struct Prepared {
  double bytes = 0;
  std::function<void()> launch;
  std::vector<Check> checks;
};

// Compares a spread sample of elements (all of them for small outputs, always the first and
// last): enough to catch a wrong index, layout or formula, cheap at real shapes.
std::string verify(const Arena& a, const Check& c) {
  const std::vector<float> got = a.read(*c.out);
  const std::size_t n = got.size();
  constexpr std::size_t kSamples = 256;
  // f16 outputs carry one rounding (2^-11 relative) on top of f32 accumulation.
  const double rel = c.out->elem == DType::f32 ? 1e-4 : 4e-3;
  for (std::size_t s = 0; s < std::min(n, kSamples); ++s) {
    const std::size_t i = n <= kSamples ? s : s == 0 ? 0 : s == 1 ? n - 1 : s * 2654435761u % n;
    const double want = c.expect(i), tol = rel * (1 + std::abs(want));
    if (!(std::abs(got[i] - want) <= tol))  // also fails on NaN
      return fmt::format("{}[{}] = {} but the host computes {:.6g} (tolerance {:.1e})", c.what, i, got[i],
                         want, tol);
  }
  return {};
}

double dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}
double silu(double x) { return x / (1 + std::exp(-x)); }

// ---- decoder kernels, activations [T, width] f16

Prepared embedding(Arena& a, const Decoder& m, int T) {
  const int D = m.hidden;
  Buf& table = a.upload(kWeight, a.uniform(std::size_t(m.vocab) * D, -1, 1));
  std::vector<float> ids(T);
  for (int t = 0; t < T; ++t)
    ids[t] = static_cast<float>((t * 7919 + 13) % m.vocab);  // spread over the table
  Buf& tokens = a.upload(DType::i32, ids);
  Buf& out = a.alloc(DType::f16, std::size_t(T) * D);
  Prepared p;
  p.bytes = double(T) * D * ds::dtype_size(kWeight) + tokens.bytes() + out.bytes();
  p.launch = [&a, &table, &tokens, &out, T, D] {
    a.k.embedding(table.dev, kWType, tokens.as<std::int32_t>(), nullptr, 0, out.dev, T, D);
  };
  p.checks.push_back({"out", &out, [&table, &tokens, D](std::size_t i) {
                        return table.host[std::size_t(tokens.host[i / D]) * D + i % D];
                      }});
  return p;
}

Prepared rmsnorm(Arena& a, const Decoder& m, int T) {
  const int H = m.hidden;
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * H, -1, 1));
  Buf& w = a.upload(DType::f32, a.uniform(H, 0.5f, 1.5f));
  Buf& y = a.alloc(DType::f16, x.n);
  std::vector<double> inv(T);
  for (int t = 0; t < T; ++t) {
    const float* r = x.host.data() + std::size_t(t) * H;
    inv[t] = 1 / std::sqrt(dot(r, r, H) / H + m.eps);
  }
  Prepared p;
  p.bytes = double(x.bytes() + w.bytes() + y.bytes());
  p.launch = [&a, &x, &w, &y, T, H, eps = m.eps] {
    a.k.rmsnorm(x.dev, w.as<float>(), 0.0f, y.dev, T, H, eps);
  };
  p.checks.push_back(
      {"y", &y, [&x, &w, inv, H](std::size_t i) { return x.host[i] * inv[i / H] * w.host[i % H]; }});
  return p;
}

Prepared layernorm(Arena& a, const Decoder& m, int T) {
  const int H = m.hidden;
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * H, -1, 1.5f));  // a non-zero mean to subtract
  Buf& w = a.upload(DType::f32, a.uniform(H, 0.5f, 1.5f));
  Buf& b = a.upload(DType::f32, a.uniform(H, -0.1f, 0.1f));
  Buf& y = a.alloc(DType::f16, x.n);
  std::vector<double> mean(T), inv(T);
  for (int t = 0; t < T; ++t) {
    const float* r = x.host.data() + std::size_t(t) * H;
    double s = 0, ss = 0;
    for (int i = 0; i < H; ++i) s += r[i];
    mean[t] = s / H;
    for (int i = 0; i < H; ++i) ss += (r[i] - mean[t]) * (r[i] - mean[t]);
    inv[t] = 1 / std::sqrt(ss / H + m.eps);
  }
  Prepared p;
  p.bytes = double(x.bytes() + w.bytes() + b.bytes() + y.bytes());
  p.launch = [&a, &x, &w, &b, &y, T, H, eps = m.eps] {
    a.k.layernorm(x.dev, w.as<float>(), b.as<float>(), y.dev, T, H, eps);
  };
  p.checks.push_back({"y", &y, [&x, &w, &b, mean, inv, H](std::size_t i) {
                        const std::size_t t = i / H, c = i % H;
                        return (x.host[i] - mean[t]) * inv[t] * w.host[c] + b.host[c];
                      }});
  return p;
}

// y = W x (+ bias); with chain_add, also resid += y in place (o_proj_add, down_add). W in kWeight, or
// block-quantized (wt Q8_0 or Q4_K: a GGUF's), its bytes the ones that count.
Prepared gemv(Arena& a, int T, int rows, int cols, bool bias, bool chain_add, dsk::WType wt = kWType) {
  const float ws = std::sqrt(3.0f / static_cast<float>(cols));  // keeps y near unit scale
  std::vector<float> w = a.uniform(std::size_t(rows) * cols, -ws, ws);
  Buf& W = wt == dsk::WType::q8_0   ? a.upload_quant(ds::ref::GgmlType::Q8_0, std::move(w))
           : wt == dsk::WType::q4_k ? a.upload_quant(ds::ref::GgmlType::Q4_K, std::move(w))
                                    : a.upload(kWeight, std::move(w));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * cols, -1, 1));
  Buf* b = bias ? &a.upload(DType::f32, a.uniform(rows, -0.1f, 0.1f)) : nullptr;
  Buf* resid = chain_add ? &a.upload(DType::f16, a.uniform(std::size_t(T) * rows, -1, 1)) : nullptr;
  Buf& y = a.alloc(DType::f16, std::size_t(T) * rows);
  Prepared p;
  p.bytes =
      double(W.bytes() + x.bytes() + y.bytes()) + (b ? b->bytes() : 0) + (resid ? 2 * resid->bytes() : 0);
  p.launch = [&a, &W, &x, b, resid, &y, T, rows, cols, wt] {
    a.k.gemv(W.dev, wt, x.dev, b ? b->as<float>() : nullptr, y.dev, resid ? resid->dev : nullptr, T, rows,
             cols);
  };
  auto want_y = [&W, &x, b, rows, cols](std::size_t i) {
    const std::size_t t = i / rows, r = i % rows;
    return dot(W.host.data() + r * cols, x.host.data() + t * cols, cols) + (b ? b->host[r] : 0.0);
  };
  p.checks.push_back({"y", &y, want_y});
  if (resid)
    p.checks.push_back(
        {"resid", resid, [resid, want_y](std::size_t i) { return resid->host[i] + want_y(i); }});
  return p;
}

// q, k, v from one packed [q | k | v] weight, as the candidate uploads it.
Prepared fused_qkv(Arena& a, const Decoder& m, int T) {
  const int qr = m.n_heads * m.head_dim, kvr = m.n_kv * m.head_dim, rows = qr + 2 * kvr, cols = m.hidden;
  const float ws = std::sqrt(3.0f / static_cast<float>(cols));
  Buf& W = a.upload(kWeight, a.uniform(std::size_t(rows) * cols, -ws, ws));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * cols, -1, 1));
  Buf* b = m.qkv_bias ? &a.upload(DType::f32, a.uniform(rows, -0.1f, 0.1f)) : nullptr;
  Buf& q = a.alloc(DType::f16, std::size_t(T) * qr);
  Buf& k = a.alloc(DType::f16, std::size_t(T) * kvr);
  Buf& v = a.alloc(DType::f16, std::size_t(T) * kvr);
  Prepared p;
  p.bytes = double(W.bytes() + x.bytes() + q.bytes() + k.bytes() + v.bytes()) + (b ? b->bytes() : 0);
  p.launch = [&a, &W, &x, b, &q, &k, &v, T, qr, kvr, cols] {
    const auto* w = static_cast<const char*>(W.dev);
    const std::size_t seg = ds::dtype_size(kWeight) * cols;
    const float* bq = b ? b->as<float>() : nullptr;
    a.k.fused_qkv(w, w + qr * seg, w + (qr + kvr) * seg, kWType, bq, bq ? bq + qr : nullptr,
                  bq ? bq + qr + kvr : nullptr, x.dev, q.dev, k.dev, v.dev, T, qr, kvr, cols);
  };
  // Output `n` rows wide whose row r is row first + r of the packed weight.
  auto want = [&W, &x, b, cols](int first, int n) {
    return [&W, &x, b, cols, first, n](std::size_t i) {
      const std::size_t t = i / n, r = first + i % n;
      return dot(W.host.data() + r * cols, x.host.data() + t * cols, cols) + (b ? b->host[r] : 0.0);
    };
  };
  p.checks.push_back({"q", &q, want(0, qr)});
  p.checks.push_back({"k", &k, want(qr, kvr)});
  p.checks.push_back({"v", &v, want(qr + kvr, kvr)});
  return p;
}

Prepared qk_norm(Arena& a, const Decoder& m, int T) {
  const int hd = m.head_dim;
  Buf& q = a.upload(DType::f16, a.uniform(std::size_t(T) * m.n_heads * hd, -1, 1));
  Buf& k = a.upload(DType::f16, a.uniform(std::size_t(T) * m.n_kv * hd, -1, 1));
  Buf& wq = a.upload(DType::f32, a.uniform(hd, 0.5f, 1.5f));
  Buf& wk = a.upload(DType::f32, a.uniform(hd, 0.5f, 1.5f));
  Buf& qn = a.alloc(DType::f16, q.n);
  Buf& kn = a.alloc(DType::f16, k.n);
  Prepared p;
  p.bytes = double(2 * q.bytes() + 2 * k.bytes() + wq.bytes() + wk.bytes());
  p.launch = [&a, &q, &k, &wq, &wk, &qn, &kn, T, m] {
    a.k.qk_norm(q.dev, k.dev, wq.as<float>(), wk.as<float>(), 0.0f, qn.dev, kn.dev, T, m.n_heads, m.n_kv,
                m.head_dim, m.eps);
  };
  auto want = [hd, eps = m.eps](const Buf& in, const Buf& w) {
    return [&in, &w, hd, eps](std::size_t i) {
      const float* head = in.host.data() + i / hd * hd;
      return in.host[i] / std::sqrt(dot(head, head, hd) / hd + eps) * w.host[i % hd];
    };
  };
  p.checks.push_back({"q_norm", &qn, want(q, wq)});
  p.checks.push_back({"k_norm", &kn, want(k, wk)});
  return p;
}

Prepared rope(Arena& a, const Decoder& m, int T, int pos0) {
  const int hd = m.head_dim, rot = m.rotary_dim;
  Buf& q = a.upload(DType::f16, a.uniform(std::size_t(T) * m.n_heads * hd, -1, 1));
  Buf& k = a.upload(DType::f16, a.uniform(std::size_t(T) * m.n_kv * hd, -1, 1));
  Buf* factors = m.freq_factors.empty() ? nullptr : &a.upload(DType::f32, m.freq_factors);
  Prepared p;
  p.bytes = 2.0 * T * (m.n_heads + m.n_kv) * rot * ds::dtype_size(DType::f16);  // only the rotated dims
  p.launch = [&a, &q, &k, factors, T, m, pos0] {
    a.k.rope(q.dev, k.dev, T, m.n_heads, m.n_kv, m.head_dim, m.rotary_dim, pos0, m.theta,
             factors ? factors->as<float>() : nullptr, m.neox);
  };
  auto want = [hd, rot, pos0, m](const Buf& in, int heads) {
    return [&in, heads, hd, rot, pos0, m](std::size_t e) {
      const int d = static_cast<int>(e % hd), half = rot / 2;
      if (d >= rot) return double(in.host[e]);
      const std::size_t head = e - d;
      const int i = m.neox ? d % half : d / 2;
      const int lo = m.neox ? i : 2 * i, hi = m.neox ? i + half : 2 * i + 1;
      const double pos = pos0 + static_cast<double>(e / (std::size_t(heads) * hd));
      const double factor = m.freq_factors.empty() ? 1.0 : double(m.freq_factors[std::size_t(i)]);
      const double angle = pos * std::pow(double(m.theta), -2.0 * i / rot) / factor;
      const double xa = in.host[head + lo], xb = in.host[head + hi];
      return d == lo ? xa * std::cos(angle) - xb * std::sin(angle)
                     : xb * std::cos(angle) + xa * std::sin(angle);
    };
  };
  p.checks.push_back({"q", &q, want(q, m.n_heads)});
  p.checks.push_back({"k", &k, want(k, m.n_kv)});
  return p;
}

// T query tokens at positions pos0.. over a cache of P = pos0 + T rows.
Prepared attention(Arena& a, const Decoder& m, int T, int pos0) {
  const int hd = m.head_dim, P = pos0 + T, qw = m.n_heads * hd, kvw = m.n_kv * hd;
  Buf& q = a.upload(DType::f16, a.uniform(std::size_t(T) * qw, -1, 1));
  Buf& kc = a.upload(DType::f16, a.uniform(std::size_t(P) * kvw, -1, 1));
  Buf& vc = a.upload(DType::f16, a.uniform(std::size_t(P) * kvw, -1, 1));
  Buf& out = a.alloc(DType::f16, q.n);
  Prepared p;
  p.bytes = double(q.bytes() + kc.bytes() + vc.bytes() + out.bytes());
  p.launch = [&a, &q, &kc, &vc, &out, T, P, pos0, m, qw, kvw] {
    a.k.attention(q.dev, kc.dev, vc.dev, out.dev, T, P, pos0, m.n_heads, m.n_kv, m.head_dim, qw, kvw);
  };
  p.checks.push_back({"out", &out, [&q, &kc, &vc, m, hd, qw, kvw, pos0](std::size_t i) {
                        const std::size_t t = i / qw, h = i % qw / hd, d = i % hd;
                        const std::size_t kh = h / (m.n_heads / m.n_kv), last = pos0 + t;
                        std::vector<double> s(last + 1);
                        for (std::size_t j = 0; j <= last; ++j)
                          s[j] =
                              dot(q.host.data() + t * qw + h * hd, kc.host.data() + j * kvw + kh * hd, hd) /
                              std::sqrt(double(hd));
                        const double mx = *std::max_element(s.begin(), s.end());
                        double sum = 0, acc = 0;
                        for (std::size_t j = 0; j <= last; ++j) {
                          const double e = std::exp(s[j] - mx);
                          sum += e;
                          acc += e * vc.host[j * kvw + kh * hd + d];
                        }
                        return acc / sum;
                      }});
  return p;
}

// gate and up read from one packed [T, 2F] gate_up output, as the candidate does.
Prepared swiglu(Arena& a, const Decoder& m, int T) {
  const int F = m.ffn;
  Buf& gu = a.upload(DType::f16, a.uniform(std::size_t(T) * 2 * F, -3, 3));
  Buf& act = a.alloc(DType::f16, std::size_t(T) * F);
  Prepared p;
  p.bytes = double(gu.bytes() + act.bytes());
  p.launch = [&a, &gu, &act, T, F] {
    const auto* g = static_cast<const char*>(gu.dev);
    a.k.swiglu(g, g + F * ds::dtype_size(DType::f16), nullptr, nullptr, false, act.dev, T, F, 2 * F);
  };
  p.checks.push_back({"act", &act, [&gu, F](std::size_t i) {
                        const std::size_t row = i / F * 2 * F, c = i % F;
                        return silu(gu.host[row + c]) * gu.host[row + F + c];
                      }});
  return p;
}

Prepared gelu(Arena& a, const Decoder& m, int T) {
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * m.ffn, -3, 3));
  Buf& y = a.alloc(DType::f16, x.n);
  Prepared p;
  p.bytes = double(x.bytes() + y.bytes());
  p.launch = [&a, &x, &y] { a.k.gelu(x.dev, y.dev, static_cast<int>(x.n)); };
  p.checks.push_back({"y", &y, [&x](std::size_t i) {
                        const double v = x.host[i];
                        return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                      }});
  return p;
}

// ---- Gated DeltaNet and its conv, f32, layouts in kernels/gdn.cu and kernels/ssm_conv.cu

// The per-token inputs of a GDN launch, made as the model makes them: k unit-norm per head,
// g <= 0 (a log decay), beta in (0, 1), so the recurrence stays bounded while it is timed.
struct GdnIn {
  Buf *q, *k, *v, *g, *beta;
  int T, nk, nv, dk, dv;

  GdnIn(Arena& a, const Gdn& m, int n_seqs, int T_) : T(T_), nk(m.nk), nv(m.nv), dk(m.dk), dv(m.dv) {
    const std::size_t rows = std::size_t(n_seqs) * T;
    const float qs = 1 / std::sqrt(static_cast<float>(dk));
    q = &a.upload(DType::f32, a.uniform(rows * nk * dk, -qs, qs));
    std::vector<float> kv = a.uniform(rows * nk * dk, -1, 1);
    for (std::size_t h = 0; h < rows * nk; ++h) {
      float* x = kv.data() + h * dk;
      const auto n = static_cast<float>(std::sqrt(dot(x, x, dk)));
      for (int i = 0; i < dk; ++i) x[i] /= n;
    }
    k = &a.upload(DType::f32, std::move(kv));
    v = &a.upload(DType::f32, a.uniform(rows * nv * dv, -1, 1));
    g = &a.upload(DType::f32, a.uniform(rows * nv, -1, 0));
    beta = &a.upload(DType::f32, a.uniform(rows * nv, 0, 1));
  }
  double bytes() const { return double(q->bytes() + k->bytes() + v->bytes() + g->bytes() + beta->bytes()); }
  std::size_t slot() const { return std::size_t(nv) * dk * dv; }

  // Column j of value head h of sequence seq, from the prior state `s0` (the slot) through
  // tokens [0, t_end): leaves the column in `col`, returns the last token's output o_j.
  double column(const float* s0, int seq, int h, int j, int t_end, std::vector<double>& col) const {
    const int kh = h / (nv / nk);
    col.resize(dk);
    for (int i = 0; i < dk; ++i) col[i] = s0[(std::size_t(h) * dk + i) * dv + j];
    double o = 0;
    for (int t = 0; t < t_end; ++t) {
      const std::size_t row = std::size_t(seq) * T + t;
      const float* kt = k->host.data() + (row * nk + kh) * dk;
      const float* qt = q->host.data() + (row * nk + kh) * dk;
      const double decay = std::exp(double(g->host[row * nv + h]));
      double mem = 0;
      for (int i = 0; i < dk; ++i) mem += (col[i] *= decay) * kt[i];
      const double delta = beta->host[row * nv + h] * (v->host[(row * nv + h) * dv + j] - mem);
      o = 0;
      for (int i = 0; i < dk; ++i) o += (col[i] += kt[i] * delta) * qt[i];
    }
    return o;
  }
  // Element i of out [n_seqs, T, nv * dv], each sequence starting from the slot prior(seq).
  double want_out(const std::function<const float*(int)>& prior, std::size_t i) const {
    const std::size_t row = i / (std::size_t(nv) * dv);
    const int h = static_cast<int>(i / dv % nv), j = static_cast<int>(i % dv);
    const int seq = static_cast<int>(row / T), t = static_cast<int>(row % T);
    std::vector<double> col;
    return column(prior(seq), seq, h, j, t + 1, col);
  }
  // Element e of the final state slot of sequence seq.
  double want_state(const float* prior, int seq, std::size_t e) const {
    const int h = static_cast<int>(e / (std::size_t(dk) * dv)), i = static_cast<int>(e / dv % dk);
    std::vector<double> col;
    column(prior, seq, h, static_cast<int>(e % dv), T, col);
    return col[i];
  }
};

// Slot ids of the fused decode ops B and D: sequence 0 reads its own destination slot rs_head
// (the in-place identity path), every other sequence s the source slot s - 1 (the gather path).
std::vector<float> mixed_ids(int n_seqs) {
  std::vector<float> ids(n_seqs);
  for (int s = 0; s < n_seqs; ++s) ids[s] = static_cast<float>(s == 0 ? n_seqs : s - 1);
  return ids;
}

// The output check of a recurrence whose sequence `seq` started from state prior(seq).
template <class Prior>
Check gdn_out_check(const std::shared_ptr<GdnIn>& in, Prior prior, const Buf& out) {
  return {"out", &out, [in, prior](std::size_t i) { return in->want_out(prior, i); }};
}

// The final states, one slot per sequence in order.
template <class Prior>
Check gdn_state_check(const char* what, const std::shared_ptr<GdnIn>& in, Prior prior, const Buf& state) {
  return {what, &state, [in, prior](std::size_t e) {
            const int seq = static_cast<int>(e / in->slot());
            return in->want_state(prior(seq), seq, e % in->slot());
          }};
}

Prepared gdn(Arena& a, const Gdn& m, int n_seqs, int T) {
  auto in = std::make_shared<GdnIn>(a, m, n_seqs, T);
  Buf& s_in = a.upload(DType::f32, a.uniform(n_seqs * in->slot(), -0.1f, 0.1f));
  Buf& s_out = a.alloc(DType::f32, s_in.n);
  Buf& out = a.alloc(DType::f32, std::size_t(n_seqs) * T * m.nv * m.dv);
  Prepared p;
  p.bytes = in->bytes() + double(s_in.bytes() + s_out.bytes() + out.bytes());
  p.launch = [&a, in, &s_in, &s_out, &out, n_seqs] {
    a.k.gdn(in->q->as<float>(), in->k->as<float>(), in->v->as<float>(), in->g->as<float>(),
            in->beta->as<float>(), s_in.as<float>(), s_out.as<float>(), out.as<float>(), n_seqs, in->T,
            in->nk, in->nv, in->dk, in->dv);
  };
  auto prior = [in, &s_in](int seq) { return s_in.host.data() + seq * in->slot(); };
  p.checks.push_back(gdn_out_check(in, prior, out));
  p.checks.push_back(gdn_state_check("state_out", in, prior, s_out));
  return p;
}

// Op A: one token, the state slots read and rewritten in place.
Prepared gdn_inplace(Arena& a, const Gdn& m, int n_seqs) {
  auto in = std::make_shared<GdnIn>(a, m, n_seqs, 1);
  Buf& state = a.upload(DType::f32, a.uniform(n_seqs * in->slot(), -0.1f, 0.1f));
  Buf& out = a.alloc(DType::f32, std::size_t(n_seqs) * m.nv * m.dv);
  Prepared p;
  p.bytes = in->bytes() + double(2 * state.bytes() + out.bytes());
  p.launch = [&a, in, &state, &out, n_seqs] {
    a.k.gdn_inplace(in->q->as<float>(), in->k->as<float>(), in->v->as<float>(), in->g->as<float>(),
                    in->beta->as<float>(), state.as<float>(), out.as<float>(), n_seqs, in->nk, in->nv, in->dk,
                    in->dv);
  };
  auto prior = [in, &state](int seq) { return state.host.data() + seq * in->slot(); };
  p.checks.push_back(gdn_out_check(in, prior, out));
  p.checks.push_back(gdn_state_check("state", in, prior, state));
  return p;
}

// Op B: one token, prior states from cache[ids[s]], final states into cache[n_seqs + s].
Prepared gdn_inplace_ids(Arena& a, const Gdn& m, int n_seqs) {
  auto in = std::make_shared<GdnIn>(a, m, n_seqs, 1);
  const std::size_t slot = in->slot();
  Buf& cache = a.upload(DType::f32, a.uniform(2 * n_seqs * slot, -0.1f, 0.1f));
  Buf& ids = a.upload(DType::i32, mixed_ids(n_seqs));
  Buf& scratch = a.alloc(DType::f32, n_seqs * slot);
  Buf& out = a.alloc(DType::f32, std::size_t(n_seqs) * m.nv * m.dv);
  Prepared p;
  p.bytes =
      in->bytes() + double(ids.bytes() + cache.bytes() + out.bytes());  // n_seqs slots read, n_seqs written
  p.launch = [&a, in, &cache, &ids, &scratch, &out, n_seqs] {
    a.k.gdn_inplace_ids(in->q->as<float>(), in->k->as<float>(), in->v->as<float>(), in->g->as<float>(),
                        in->beta->as<float>(), cache.as<float>(), ids.as<std::int32_t>(), n_seqs,
                        scratch.as<float>(), out.as<float>(), n_seqs, in->nk, in->nv, in->dk, in->dv);
  };
  auto prior = [&cache, &ids, slot](int seq) {
    return cache.host.data() + std::size_t(ids.host[seq]) * slot;
  };
  p.checks.push_back(gdn_out_check(in, prior, out));
  p.checks.push_back({"cache", &cache, [in, prior, &cache, slot, n_seqs](std::size_t e) {
                        const std::size_t s = e / slot;
                        if (s < std::size_t(n_seqs)) return double(cache.host[e]);  // source slots untouched
                        const int seq = static_cast<int>(s) - n_seqs;
                        return in->want_state(prior(seq), seq, e % slot);
                      }});
  return p;
}

struct ConvIn {
  int C, K;
  Buf *w, *x;
  ConvIn(Arena& a, const Gdn& m, int n_seqs)
      : C(m.conv_channels()),
        K(m.conv_k),
        w(&a.upload(DType::f32, a.uniform(std::size_t(C) * K, -0.5f, 0.5f))),
        x(&a.upload(DType::f32, a.uniform(std::size_t(n_seqs) * C, -1, 1))) {}
  // SiLU(conv) of channel c over a window of K values, oldest first.
  double conv(const float* win, int c) const {
    double s = 0;
    for (int i = 0; i < K; ++i) s += double(win[i]) * w->host[std::size_t(c) * K + i];
    return silu(s);
  }
};

// Plain conv over pre-concatenated windows sx [n_seqs, C, K-1+T] (the prefill path).
Prepared ssm_conv(Arena& a, const Gdn& m, int n_seqs, int T) {
  ConvIn in(a, m, n_seqs);
  const int C = in.C, K = in.K;
  Buf& sx = a.upload(DType::f32, a.uniform(std::size_t(n_seqs) * C * (K - 1 + T), -1, 1));
  Buf& y = a.alloc(DType::f32, std::size_t(n_seqs) * T * C);
  Prepared p;
  p.bytes = double(sx.bytes() + in.w->bytes() + y.bytes());
  p.launch = [&a, &sx, w = in.w, &y, n_seqs, T, C, K] {
    a.k.ssm_conv(sx.as<float>(), w->as<float>(), y.as<float>(), n_seqs, T, C, K, true);
  };
  p.checks.push_back({"y", &y, [in, &sx, T](std::size_t i) {
                        const std::size_t c = i % in.C, t = i / in.C % T, seq = i / (std::size_t(in.C) * T);
                        return in.conv(sx.host.data() + (seq * in.C + c) * (in.K - 1 + T) + t, int(c));
                      }});
  return p;
}

// The K-1 taps of (seq, channel) followed by the current input.
std::vector<float> window(const ConvIn& in, const float* taps, int seq, int c) {
  std::vector<float> w(taps, taps + in.K - 1);
  w.push_back(in.x->host[std::size_t(seq) * in.C + c]);
  return w;
}

// y of a conv update whose (seq, channel) taps are taps(seq, c).
template <class Taps>
Check conv_y_check(const ConvIn& in, Taps taps, const Buf& y) {
  return {"y", &y, [in, taps](std::size_t i) {
            const int seq = static_cast<int>(i / in.C), c = static_cast<int>(i % in.C);
            return in.conv(window(in, taps(seq, c), seq, c).data(), c);
          }};
}

// Element e of the updated ring (every (seq, channel)'s K-1 taps in order): the window shifted by one.
template <class Taps>
double ring_after(const ConvIn& in, Taps taps, std::size_t e) {
  const std::size_t tap = e / (in.K - 1);
  const int seq = static_cast<int>(tap / in.C), c = static_cast<int>(tap % in.C);
  return double(window(in, taps(seq, c), seq, c)[e % (in.K - 1) + 1]);
}

// Op C: taps from state_in, the shifted ring into a separate state_dst.
Prepared ssm_conv_update(Arena& a, const Gdn& m, int n_seqs) {
  ConvIn in(a, m, n_seqs);
  const int C = in.C, K = in.K;
  Buf& s_in = a.upload(DType::f32, a.uniform(std::size_t(n_seqs) * C * (K - 1), -1, 1));
  Buf& s_dst = a.alloc(DType::f32, s_in.n);
  Buf& y = a.alloc(DType::f32, std::size_t(n_seqs) * C);
  Prepared p;
  p.bytes = double(s_in.bytes() + in.w->bytes() + in.x->bytes() + s_dst.bytes() + y.bytes());
  p.launch = [&a, &s_in, in, &s_dst, &y, n_seqs, C, K] {
    a.k.ssm_conv_update(s_in.as<float>(), in.w->as<float>(), in.x->as<float>(), s_dst.as<float>(),
                        y.as<float>(), n_seqs, C, K, true);
  };
  auto taps = [&s_in, C, K](std::size_t seq, int c) { return s_in.host.data() + (seq * C + c) * (K - 1); };
  p.checks.push_back(conv_y_check(in, taps, y));
  p.checks.push_back({"state_dst", &s_dst, [in, taps](std::size_t e) { return ring_after(in, taps, e); }});
  return p;
}

// Op D: taps from cache[ids[s]], the ring into cache[n_seqs + s].
Prepared ssm_conv_update_ids(Arena& a, const Gdn& m, int n_seqs) {
  ConvIn in(a, m, n_seqs);
  const int C = in.C, K = in.K;
  const std::size_t slot = std::size_t(C) * (K - 1);
  Buf& cache = a.upload(DType::f32, a.uniform(2 * n_seqs * slot, -1, 1));
  Buf& ids = a.upload(DType::i32, mixed_ids(n_seqs));
  Buf& scratch = a.alloc(DType::f32, n_seqs * slot);
  Buf& y = a.alloc(DType::f32, std::size_t(n_seqs) * C);
  Prepared p;
  p.bytes = double(cache.bytes() + ids.bytes() + in.w->bytes() + in.x->bytes() + y.bytes());
  p.launch = [&a, &cache, &ids, &scratch, in, &y, n_seqs, C, K] {
    a.k.ssm_conv_update_ids(cache.as<float>(), ids.as<std::int32_t>(), n_seqs, scratch.as<float>(),
                            in.w->as<float>(), in.x->as<float>(), y.as<float>(), n_seqs, C, K, true);
  };
  auto taps = [&cache, &ids, slot, K](int seq, int c) {
    return cache.host.data() + std::size_t(ids.host[seq]) * slot + std::size_t(c) * (K - 1);
  };
  p.checks.push_back(conv_y_check(in, taps, y));
  p.checks.push_back({"cache", &cache, [in, taps, &cache, slot, n_seqs](std::size_t e) {
                        if (e < n_seqs * slot) return double(cache.host[e]);  // source slots untouched
                        return ring_after(in, taps, e - n_seqs * slot);
                      }});
  return p;
}

// ---- the rest of a Qwen3-Next layer on the GDN shape (and the attention gate on every decoder)

Prepared attn_gate(Arena& a, const Decoder& m, int T) {
  const std::size_t n = std::size_t(T) * m.n_heads * m.head_dim;
  Buf& attn = a.upload(DType::f16, a.uniform(n, -1, 1));
  Buf& gate = a.upload(DType::f16, a.uniform(n, -4, 4));
  Buf& y = a.alloc(DType::f16, n);
  Prepared p;
  p.bytes = double(attn.bytes() + gate.bytes() + y.bytes());
  p.launch = [&a, &attn, &gate, &y, n] { a.k.attn_gate(attn.dev, gate.dev, y.dev, static_cast<int>(n)); };
  p.checks.push_back({"y", &y, [&attn, &gate](std::size_t i) {
                        return attn.host[i] / (1 + std::exp(-double(gate.host[i])));
                      }});
  return p;
}

// beta and g of T tokens: two GEMV rows per value head with their sigmoid / softplus epilogues.
Prepared gdn_gates(Arena& a, const Gdn& m, int T) {
  const int D = m.hidden, nv = m.nv;
  const float ws = std::sqrt(3.0f / static_cast<float>(D));
  Buf& W = a.upload(kWeight, a.uniform(std::size_t(2) * nv * D, -ws, ws));  // [W_beta | W_alpha]
  Buf& a_neg = a.upload(DType::f32, a.uniform(nv, -2, -0.1f));
  Buf& dt = a.upload(DType::f32, a.uniform(nv, -1, 1));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& beta = a.alloc(DType::f16, std::size_t(T) * nv);
  Buf& g = a.alloc(DType::f16, std::size_t(T) * nv);
  Prepared p;
  p.bytes = double(W.bytes() + a_neg.bytes() + dt.bytes() + x.bytes() + beta.bytes() + g.bytes());
  p.launch = [&a, &W, &a_neg, &dt, &x, &beta, &g, T, nv, D] {
    const auto* w = static_cast<const char*>(W.dev);
    a.k.gdn_gates(w, w + std::size_t(nv) * D * ds::dtype_size(kWeight), kWType, a_neg.as<float>(),
                  dt.as<float>(), x.dev, beta.dev, g.dev, T, nv, D);
  };
  auto u = [&W, &x, nv, D](std::size_t i, int which) {  // pre-activation of output i
    return dot(W.host.data() + (std::size_t(which) * nv + i % nv) * D, x.host.data() + i / nv * D, D);
  };
  p.checks.push_back({"beta", &beta, [u](std::size_t i) { return 1 / (1 + std::exp(-u(i, 0))); }});
  p.checks.push_back({"g", &g, [u, &a_neg, &dt, nv](std::size_t i) {
                        const double v = u(i, 1) + dt.host[i % nv];
                        return a_neg.host[i % nv] * (v > 20 ? v : std::log1p(std::exp(v)));
                      }});
  return p;
}

// q and k L2-normalised per head, read out of conv rows [q | k | v].
Prepared l2norm(Arena& a, const Gdn& m, int T) {
  const int C = m.conv_channels(), kd = m.nk * m.dk, dk = m.dk;
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * C, -1, 1));
  Buf& q = a.alloc(DType::f16, std::size_t(T) * kd);
  Buf& k = a.alloc(DType::f16, std::size_t(T) * kd);
  const float q_scale = 1 / std::sqrt(static_cast<float>(dk));
  Prepared p;
  p.bytes = double(std::size_t(T) * 2 * kd * 2 + q.bytes() + k.bytes());
  p.launch = [&a, &x, &q, &k, T, C, m, q_scale] {
    a.k.l2norm(x.dev, C, q.dev, k.dev, T, m.nk, m.dk, q_scale);
  };
  auto want = [&x, C, kd, dk](int first, double scale) {
    return [&x, C, kd, dk, first, scale](std::size_t i) {
      const std::size_t t = i / kd, h = i % kd / dk;
      const float* head = x.host.data() + t * C + first + h * dk;
      return head[i % dk] / std::sqrt(dot(head, head, dk) + 1e-6) * scale;
    };
  };
  p.checks.push_back({"q", &q, want(0, q_scale)});
  p.checks.push_back({"k", &k, want(kd, 1)});
  return p;
}

Prepared gated_rmsnorm(Arena& a, const Gdn& m, int T) {
  const int dv = m.dv;
  const std::size_t n = std::size_t(T) * m.nv * dv;
  Buf& o = a.upload(DType::f16, a.uniform(n, -1, 1));
  Buf& z = a.upload(DType::f16, a.uniform(n, -3, 3));
  Buf& w = a.upload(DType::f32, a.uniform(dv, 0.5f, 1.5f));
  Buf& y = a.alloc(DType::f16, n);
  Prepared p;
  p.bytes = double(o.bytes() + z.bytes() + w.bytes() + y.bytes());
  p.launch = [&a, &o, &z, &w, &y, T, m] {
    a.k.gated_rmsnorm(o.dev, z.dev, w.as<float>(), y.dev, T, m.nv, m.dv, 1e-6f);
  };
  p.checks.push_back({"y", &y, [&o, &z, &w, dv](std::size_t i) {
                        const float* head = o.host.data() + i / dv * dv;
                        return w.host[i % dv] * o.host[i] / std::sqrt(dot(head, head, dv) / dv + 1e-6) *
                               silu(z.host[i]);
                      }});
  return p;
}

// ---- mixture-of-experts kernels (moe_route.cu, moe_experts.cu, moe_shexp.cu), activations [T, width] f16

// The router logits are checked: the top-k and the weights follow from them by rules
// tests/kernels/test_moe_kernels.cpp checks against the reference's.
Prepared moe_route(Arena& a, const Moe& m, int T) {
  const int D = m.hidden, E = m.experts, K = m.top_k;
  const float ws = std::sqrt(3.0f / static_cast<float>(D));
  Buf& W = a.upload(kWeight, a.uniform(std::size_t(E) * D, -ws, ws));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& logits = a.alloc(DType::f16, std::size_t(T) * E);
  Buf& ids = a.alloc(DType::i32, std::size_t(T) * K);
  Buf& weights = a.alloc(DType::f16, std::size_t(T) * K);
  Prepared p;
  p.bytes = double(W.bytes() + x.bytes() + logits.bytes() + ids.bytes() + weights.bytes());
  p.launch = [&a, &W, &x, &logits, &ids, &weights, T, m] {
    a.k.moe_route(W.dev, kWType, x.dev, logits.dev, ids.as<std::int32_t>(), weights.dev, T, m.experts,
                  m.hidden, m.top_k, m.softmax_topk ? dsk::MoeRule::softmax_topk : dsk::MoeRule::topk_softmax,
                  m.norm_topk);
  };
  p.checks.push_back({"logits", &logits, [&W, &x, D, E](std::size_t i) {
                        return dot(W.host.data() + i % E * D, x.host.data() + i / E * D, D);
                      }});
  return p;
}

// Each token's experts spread over the layer (token t, slot j: expert (t * 7 + j * 13) mod E, distinct
// while k * 13 < E), equal weights 1 / k, the residual updated in place. The bytes are the experts' weights
// the launch must read once each.
Prepared moe_experts(Arena& a, const Moe& m, int T) {
  const int D = m.hidden, E = m.experts, K = m.top_k, F = m.expert_ffn;
  const float wg = std::sqrt(3.0f / static_cast<float>(D)), wd = std::sqrt(3.0f / static_cast<float>(F));
  Buf& Wg = a.upload(kWeight, a.uniform(std::size_t(E) * F * D, -wg, wg));
  Buf& Wu = a.upload(kWeight, a.uniform(std::size_t(E) * F * D, -wg, wg));
  Buf& Wd = a.upload(kWeight, a.uniform(std::size_t(E) * D * F, -wd, wd));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  std::vector<float> id(std::size_t(T) * K);
  std::vector<bool> used(std::size_t(E), false);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < K; ++j) {
      const int e = (t * 7 + j * 13) % E;
      id[std::size_t(t) * K + j] = static_cast<float>(e);
      used[std::size_t(e)] = true;
    }
  Buf& ids = a.upload(DType::i32, id);
  Buf& w = a.upload(DType::f16, std::vector<float>(std::size_t(T) * K, 1.0f / static_cast<float>(K)));
  Buf& resid = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& out = a.alloc(DType::f16, std::size_t(T) * D);
  Buf& scratch = a.alloc(DType::f32, (dsk::moe_scratch_bytes(T, K, E, F, D) + 3) / 4);  // raw bytes
  const double n_used = double(std::count(used.begin(), used.end(), true));
  Prepared p;
  p.bytes = n_used * 3 * F * D * ds::dtype_size(kWeight) +
            double(x.bytes() + ids.bytes() + w.bytes() + 2 * resid.bytes() + out.bytes());
  p.launch = [&a, &Wg, &Wu, &Wd, &x, &ids, &w, &out, &resid, &scratch, T, K, E, F, D] {
    a.k.moe_experts(Wg.dev, Wu.dev, Wd.dev, kWType, kWType, x.dev, ids.as<std::int32_t>(), w.dev, out.dev,
                    resid.dev, scratch.dev, T, K, E, F, D);
  };
  // Each (token, slot)'s SwiGLU activation, computed once when a checked element first needs it.
  auto acts = std::make_shared<std::vector<std::vector<double>>>(std::size_t(T) * K);
  auto want = [&Wg, &Wu, &Wd, &x, &ids, &w, acts, K, F, D](std::size_t i) {
    const std::size_t t = i / std::size_t(D), d = i % std::size_t(D);
    double y = 0;
    for (int j = 0; j < K; ++j) {
      const std::size_t slot = t * std::size_t(K) + std::size_t(j), e = std::size_t(ids.host[slot]);
      std::vector<double>& act = (*acts)[slot];
      if (act.empty())
        for (int f = 0; f < F; ++f) {
          const float* xr = x.host.data() + t * std::size_t(D);
          act.push_back(silu(dot(Wg.host.data() + (e * F + std::size_t(f)) * D, xr, D)) *
                        dot(Wu.host.data() + (e * F + std::size_t(f)) * D, xr, D));
        }
      double down = 0;
      for (int f = 0; f < F; ++f)
        down += Wd.host[(e * D + d) * std::size_t(F) + std::size_t(f)] * act[std::size_t(f)];
      y += w.host[slot] * down;
    }
    return y;
  };
  p.checks.push_back({"out", &out, want});
  p.checks.push_back({"resid", &resid, [&resid, want](std::size_t i) { return resid.host[i] + want(i); }});
  return p;
}

// Qwen3-Next's shared-expert gate and the FFN's sum (moe_shexp.cu): the gate row, ffn_norm, the two
// FFN halves and the residual read, the gate, ffn_out and the residual written.
Prepared moe_shexp(Arena& a, const Moe& m, int T) {
  const int D = m.hidden;
  const float ws = std::sqrt(3.0f / static_cast<float>(D));
  Buf& W = a.upload(kWeight, a.uniform(std::size_t(D), -ws, ws));
  Buf& x = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& moe = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& sh = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& resid = a.upload(DType::f16, a.uniform(std::size_t(T) * D, -1, 1));
  Buf& gate = a.alloc(DType::f16, std::size_t(T));
  Buf& out = a.alloc(DType::f16, std::size_t(T) * D);
  Prepared p;
  p.bytes = double(W.bytes() + x.bytes() + moe.bytes() + sh.bytes() + 2 * resid.bytes() + gate.bytes() +
                   out.bytes());
  p.launch = [&a, &W, &x, &moe, &sh, &gate, &out, &resid, T, D] {
    a.k.moe_shexp_gate_add(W.dev, kWType, x.dev, moe.dev, sh.dev, gate.dev, out.dev, resid.dev, T, D);
  };
  auto g = [&W, &x, D](std::size_t t) {
    return 1 / (1 + std::exp(-dot(W.host.data(), x.host.data() + t * std::size_t(D), D)));
  };
  auto want = [&moe, &sh, g, D](std::size_t i) { return moe.host[i] + g(i / std::size_t(D)) * sh.host[i]; };
  p.checks.push_back({"gate", &gate, g});
  p.checks.push_back({"out", &out, want});
  p.checks.push_back({"resid", &resid, [&resid, want](std::size_t i) { return resid.host[i] + want(i); }});
  return p;
}

// ----------------------------------------------------------------------------------------
// Cases, timing, registration

struct Case {
  std::string name;  // <model>/<kernel>/<decode|prefillT>
  std::function<Prepared(Arena&)> prepare;
};

// Every decoder kernel runs at each decoder shape, also those its family does not use
// (layernorm, gelu, qk_norm): a kernel only sees widths and head counts.
std::vector<Case> cases(bool smoke) {
  const Steps st = steps(smoke);
  std::vector<Case> out;
  auto add = [&out](std::string name, std::function<Prepared(Arena&)> f) {
    out.push_back({std::move(name), std::move(f)});
  };
  for (const Decoder& m : decoder_shapes(smoke)) {
    struct Mode {
      std::string name;
      int T, pos0;
    };
    for (const Mode& md :
         {Mode{"decode", 1, st.decode_pos0}, Mode{fmt::format("prefill{}", st.prefill_T), st.prefill_T, 0}}) {
      const int T = md.T, pos0 = md.pos0;
      auto name = [&m, &md](const char* kernel) { return fmt::format("{}/{}/{}", m.name, kernel, md.name); };
      const int qw = m.n_heads * m.head_dim;
      if (!m.ffn_only) {
        add(name("embedding"), [m, T](Arena& a) { return embedding(a, m, T); });
        add(name("layernorm"), [m, T](Arena& a) { return layernorm(a, m, T); });
        add(name("fused_qkv"), [m, T](Arena& a) { return fused_qkv(a, m, T); });
        add(name("qk_norm"), [m, T](Arena& a) { return qk_norm(a, m, T); });
        add(name("rope"), [m, T, pos0](Arena& a) { return rope(a, m, T, pos0); });
        add(name("attention"), [m, T, pos0](Arena& a) { return attention(a, m, T, pos0); });
        add(name("gemv.o_proj_add"), [m, T, qw](Arena& a) { return gemv(a, T, m.hidden, qw, false, true); });
      }
      add(name("rmsnorm"), [m, T](Arena& a) { return rmsnorm(a, m, T); });
      add(name("gemv.gate_up"), [m, T](Arena& a) { return gemv(a, T, 2 * m.ffn, m.hidden, false, false); });
      add(name("swiglu"), [m, T](Arena& a) { return swiglu(a, m, T); });
      add(name("gelu"), [m, T](Arena& a) { return gelu(a, m, T); });
      if (!m.ffn_only) add(name("attn_gate"), [m, T](Arena& a) { return attn_gate(a, m, T); });
      add(name("gemv.down_add"), [m, T](Arena& a) { return gemv(a, T, m.hidden, m.ffn, false, true); });
      // The same from a quantized file's blocks (kernels/quant_rows.cuh), where the width is whole
      // blocks: Q8_0's 32 elements, Q4_K's 256.
      if (m.ffn % 32 == 0)
        add(name("gemv.down_add.q8_0"),
            [m, T](Arena& a) { return gemv(a, T, m.hidden, m.ffn, false, true, dsk::WType::q8_0); });
      if (m.ffn % 256 == 0)
        add(name("gemv.down_add.q4_k"),
            [m, T](Arena& a) { return gemv(a, T, m.hidden, m.ffn, false, true, dsk::WType::q4_k); });
      // Decode only: sampling after a prefill needs the logits of its last token alone.
      if (!m.ffn_only && T == 1)
        add(name("gemv.lm_head"), [m](Arena& a) { return gemv(a, 1, m.vocab, m.hidden, false, false); });
    }
  }
  const Moe moe = moe_shape(smoke);
  for (const auto& [mode, T] : {std::pair{std::string("decode"), 1},
                                std::pair{fmt::format("prefill{}", st.prefill_T), st.prefill_T}}) {
    add(fmt::format("{}/moe_route/{}", moe.name, mode), [moe, T](Arena& a) { return moe_route(a, moe, T); });
    add(fmt::format("{}/moe_experts/{}", moe.name, mode),
        [moe, T](Arena& a) { return moe_experts(a, moe, T); });
    add(fmt::format("{}/moe_shexp/{}", moe.name, mode), [moe, T](Arena& a) { return moe_shexp(a, moe, T); });
  }
  const Gdn g = gdn_shape(smoke);
  const int n = st.n_seqs, T = st.prefill_T;
  const std::string pre = fmt::format("prefill{}", T);
  add(fmt::format("{}/gdn/decode", g.name), [g, n](Arena& a) { return gdn(a, g, n, 1); });
  add(fmt::format("{}/gdn/{}", g.name, pre), [g, T](Arena& a) { return gdn(a, g, 1, T); });
  add(fmt::format("{}/gdn_inplace/decode", g.name), [g, n](Arena& a) { return gdn_inplace(a, g, n); });
  add(fmt::format("{}/gdn_inplace_ids/decode", g.name),
      [g, n](Arena& a) { return gdn_inplace_ids(a, g, n); });
  add(fmt::format("{}/ssm_conv/decode", g.name), [g, n](Arena& a) { return ssm_conv(a, g, n, 1); });
  add(fmt::format("{}/ssm_conv/{}", g.name, pre), [g, T](Arena& a) { return ssm_conv(a, g, 1, T); });
  add(fmt::format("{}/ssm_conv_update/decode", g.name),
      [g, n](Arena& a) { return ssm_conv_update(a, g, n); });
  add(fmt::format("{}/ssm_conv_update_ids/decode", g.name),
      [g, n](Arena& a) { return ssm_conv_update_ids(a, g, n); });
  // The layer's other kernels, over n decode tokens (one per sequence) and a prefill.
  for (const auto& [mode, rows] : {std::pair{std::string("decode"), n}, std::pair{pre, T}}) {
    add(fmt::format("{}/gdn_gates/{}", g.name, mode), [g, rows](Arena& a) { return gdn_gates(a, g, rows); });
    add(fmt::format("{}/l2norm/{}", g.name, mode), [g, rows](Arena& a) { return l2norm(a, g, rows); });
    add(fmt::format("{}/gated_rmsnorm/{}", g.name, mode),
        [g, rows](Arena& a) { return gated_rmsnorm(a, g, rows); });
  }
  return out;
}

bool g_failed = false;  // a check or a launch failed: the exit status says so
double g_peak_gbps = 0;

void fail(benchmark::State& state, const std::string& why) {
  g_failed = true;
  state.SkipWithError(why.c_str());
}

// Wall time of one launch on the CPU fibers: the launch returns when every block has run.
double time_simt(const Prepared& p, const dsk::KernelTable& k) {
  const auto t0 = std::chrono::steady_clock::now();
  p.launch();
  k.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_case(benchmark::State& state, const dsk::KernelTable& k, const Case& c) {
  if (const std::string err = k.device_error(); !err.empty()) {
    state.SkipWithError(err.c_str());  // no GPU here: skipped, not failed
    return;
  }
  const bool gpu = std::strcmp(k.backend, "cuda") == 0;
  try {
    Arena a(k);
    const Prepared p = c.prepare(a);
    p.launch();  // also the warm-up: the first launch of a kernel loads its module
    k.synchronize();
    for (const Check& chk : p.checks)
      if (const std::string bad = verify(a, chk); !bad.empty())
        return fail(state, fmt::format("{} {}: {}", k.backend, c.name, bad));
    double total = 0;
    for (auto _ : state) {
#if defined(DS_BENCH_CUDA)
      const double s = gpu ? cuda_time_cold(p.launch) : time_simt(p, k);
#else
      const double s = time_simt(p, k);
#endif
      state.SetIterationTime(s);
      total += s;
    }
    const double gbps = p.bytes * static_cast<double>(state.iterations()) / total / 1e9;
    state.counters["bytes"] = p.bytes;
    state.counters["GB/s"] = gbps;
    if (gpu && g_peak_gbps > 0) state.counters["peak_ratio"] = gbps / g_peak_gbps;
  } catch (const std::exception& e) {
    fail(state, fmt::format("{} {}: {}", k.backend, c.name, e.what()));
  }
}

void register_backend(const dsk::KernelTable& k, bool smoke) {
  for (Case& c : cases(smoke)) {
    const std::string name = fmt::format("{}/{}", k.backend, c.name);
    auto* b = benchmark::RegisterBenchmark(
        name.c_str(), [&k, c = std::move(c)](benchmark::State& s) { run_case(s, k, c); });
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    // Each GPU iteration pays an L2 flush besides the launch: a fixed count keeps a run of
    // the whole suite to minutes whatever a kernel's own time.
    if (std::strcmp(k.backend, "cuda") == 0) b->Iterations(200);
  }
}

}  // namespace
}  // namespace dsb

int main(int argc, char** argv) {
  // Ours, taken out before Google Benchmark sees (and rejects) it: `--mutant=NAME` runs every case
  // on a mutant's tables (kernels/mutants/), and the checks must then fail where its bug shows:
  // bench.kernels_catches_bug shows they do.
  const dsk::KernelTable* simt = &dsk_simt::table();
#if defined(DS_BENCH_CUDA)
  const dsk::KernelTable* cuda_table = &dsk_cuda::table();
#endif
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--mutant=", 9) == 0) {
      const std::string name = argv[i] + 9;
      simt = dsk_simt::mutant_table(name);
#if defined(DS_BENCH_CUDA)
      cuda_table = dsk_cuda::mutant_table(name);
#endif
      if (simt == nullptr) {
        fmt::print(stderr, "bench_kernels: --mutant={}: no such kernel mutant (one of: {})\n", name,
                   fmt::join(dsk_simt::mutant_names(), ", "));
        return 2;
      }
      std::copy(argv + i + 1, argv + argc, argv + i);
      --argc, --i;
    }
  dsb::register_backend(*simt, true);
#if defined(DS_BENCH_CUDA)
  const dsk::KernelTable& cuda = *cuda_table;
  if (const std::string err = cuda.device_error(); err.empty()) {
    dsb::CudaDevice dev;
    if (const std::string bad = dsb::cuda_device(dev); bad.empty()) {
      dsb::g_peak_gbps = dev.peak_gbps;
      benchmark::AddCustomContext("cuda_device", dev.name);
      benchmark::AddCustomContext("cuda_peak_GB/s", fmt::format("{:.0f}", dev.peak_gbps));
      benchmark::AddCustomContext("cuda_L2_MiB", fmt::format("{:.1f}", dev.l2_bytes / 1048576.0));
    } else {
      benchmark::AddCustomContext("cuda_device", bad);
    }
  } else {
    benchmark::AddCustomContext("cuda_device", err);
  }
  dsb::register_backend(cuda, false);
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  // A filter matching nothing must not pass as a green smoke test.
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ran == 0) return 2;
  return dsb::g_failed ? 1 : 0;
}
