// Gated DeltaNet ops (reference-math.md §3-4), in double, in the recurrent (not chunked) form.
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "ops.h"

namespace ds::ref {

namespace {
void check(bool ok, std::string_view what) {
  if (!ok) throw std::invalid_argument(fmt::format("gdn: {}", what));
}
}  // namespace

Tensor l2norm(const Tensor& x, int width, double eps, double scale) {
  check(x.numel() % width == 0, "l2norm width");
  Tensor y(DType::f64, x.shape());
  const double* xs = x.data<double>();
  double* ys = y.data<double>();
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < width; ++i) ss += xs[r * width + i] * xs[r * width + i];
    const double inv = 1.0 / std::sqrt(ss + eps);
    for (int i = 0; i < width; ++i) ys[r * width + i] = xs[r * width + i] * inv * scale;
  }
  return y;
}

Tensor conv_silu(const Tensor& x, const Tensor& w, Tensor& state) {
  const std::int64_t T = x.dim(0), C = x.dim(1), K = w.dim(1), S = state.dim(0);
  check(w.dim(0) == C && state.dim(1) == C && S >= K - 1,
        fmt::format("conv shapes x {} w {} state {}", shape_str(x.shape()), shape_str(w.shape()),
                    shape_str(state.shape())));
  const Tensor window = Tensor::concat_rows(state, x);  // [S + T, C], oldest first
  const double* win = window.data<double>();
  const double* ws = w.data<double>();
  Tensor y(DType::f64, {T, C});
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (std::int64_t i = 0; i < K; ++i) acc += ws[c * K + i] * win[(S + t - (K - 1) + i) * C + c];
      y.data<double>()[t * C + c] = silu(acc);
    }
  state = window.rows(T, S + T);
  return y;
}

Tensor gdn_beta(const Tensor& b) {
  Tensor y(DType::f64, b.shape());
  for (std::int64_t i = 0; i < b.numel(); ++i) y.data<double>()[i] = sigmoid(b.data<double>()[i]);
  return y;
}

Tensor gdn_g(const Tensor& a, const Tensor& a_neg, const Tensor& dt_bias) {
  const std::int64_t H = a.dim(1);
  check(a_neg.numel() == H && dt_bias.numel() == H, "A / dt_bias size");
  Tensor y(DType::f64, a.shape());
  for (std::int64_t t = 0; t < a.dim(0); ++t)
    for (std::int64_t h = 0; h < H; ++h)
      y.data<double>()[t * H + h] =
          a_neg.data<double>()[h] * softplus(a.data<double>()[t * H + h] + dt_bias.data<double>()[h]);
  return y;
}

Tensor gdn_recurrence(const ModelConfig& cfg, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& g, const Tensor& beta, std::vector<double>& state, bool f32) {
  // f32: as an f32 engine runs it (an engine's numerics with accum=f32), every product, sum and the
  // state itself rounded to f32 as it goes; else exact.
  const auto r = [f32](double x) { return f32 ? double(float(x)) : x; };
  const int nk = cfg.gdn_k_heads, nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  const std::int64_t T = q.dim(0);
  check(q.dim(1) == nk * dk && k.shape() == q.shape() && v.dim(1) == nv * dv && g.dim(1) == nv &&
            beta.dim(1) == nv && v.dim(0) == T,
        "recurrence input shapes");
  const std::size_t mat = std::size_t(dk) * std::size_t(dv);
  if (state.empty()) state.assign(mat * std::size_t(nv), 0.0);
  check(state.size() == mat * std::size_t(nv), "state size");
  Tensor o(DType::f64, {T, std::int64_t(nv) * dv});
  std::vector<double> delta(static_cast<std::size_t>(dv));
  for (std::int64_t t = 0; t < T; ++t)
    for (int h = 0; h < nv; ++h) {
      const int kh = cfg.gdn_key_head(h);
      const double* qh = q.data<double>() + t * nk * dk + kh * dk;
      const double* kv = k.data<double>() + t * nk * dk + kh * dk;
      const double* vh = v.data<double>() + t * nv * dv + h * dv;
      const double decay = r(std::exp(g.data<double>()[t * nv + h]));
      const double b = beta.data<double>()[t * nv + h];
      double* S = state.data() + std::size_t(h) * mat;
      for (std::size_t i = 0; i < mat; ++i) S[i] = r(S[i] * decay);
      for (int j = 0; j < dv; ++j) {
        double m = 0;
        for (int i = 0; i < dk; ++i) m = r(m + r(S[i * dv + j] * kv[i]));
        delta[std::size_t(j)] = r(b * r(vh[j] - m));
      }
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) S[i * dv + j] = r(S[i * dv + j] + r(kv[i] * delta[std::size_t(j)]));
      double* oh = o.data<double>() + t * nv * dv + h * dv;
      for (int j = 0; j < dv; ++j) {
        double acc = 0;
        for (int i = 0; i < dk; ++i) acc = r(acc + r(S[i * dv + j] * qh[i]));
        oh[j] = acc;
      }
    }
  return o;
}

Tensor gated_rmsnorm(const Tensor& o, const Tensor& z, const Tensor& w, double eps, int width) {
  check(o.shape() == z.shape() && w.numel() == width && o.numel() % width == 0, "gated norm shapes");
  Tensor y(DType::f64, o.shape());
  const double *os = o.data<double>(), *zs = z.data<double>(), *ws = w.data<double>();
  for (std::int64_t r = 0, rows = o.numel() / width; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < width; ++i) ss += os[r * width + i] * os[r * width + i];
    const double inv = 1.0 / std::sqrt(ss / width + eps);
    for (int i = 0; i < width; ++i) {
      const std::int64_t e = r * width + i;
      y.data<double>()[e] = ws[i] * (os[e] * inv) * silu(zs[e]);
    }
  }
  return y;
}

}  // namespace ds::ref
