#include "cpu_gdn_ops.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace ds::cpu {

namespace {
float sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplusf(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
}  // namespace

Mat sigmoid_mul(const Mat& a, const Mat& g) {
  if (a.v.size() != g.v.size()) throw std::invalid_argument("cpu sigmoid_mul: shapes differ");
  Mat y = a;
  for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] *= sigmoidf(g.v[i]);
  return y;
}

Mat gdn_beta(const Mat& b) {
  Mat y = b;
  for (float& e : y.v) e = sigmoidf(e);
  return y;
}

Mat gdn_decay(const Mat& a, std::span<const float> a_neg, std::span<const float> dt_bias) {
  if (a_neg.size() != std::size_t(a.cols) || dt_bias.size() != std::size_t(a.cols))
    throw std::invalid_argument("cpu gdn_decay: ssm_a / ssm_dt.bias size differs from the head count");
  Mat y = a;
  for (std::int64_t t = 0; t < y.rows; ++t)
    for (std::int64_t h = 0; h < y.cols; ++h)
      y.row(t)[h] = a_neg[std::size_t(h)] * softplusf(a.row(t)[h] + dt_bias[std::size_t(h)]);
  return y;
}

Mat conv_silu(const Mat& x, const Mat& w, const Mat& prev, int state_rows, Mat& next) {
  const std::int64_t T = x.rows, C = x.cols, K = w.cols, S = state_rows;
  if (w.rows != C || S < K - 1) throw std::invalid_argument("cpu conv: weight or state shape");
  if (!prev.v.empty() && (prev.rows != S || prev.cols != C))
    throw std::invalid_argument(fmt::format("cpu conv: the previous conv state is [{}, {}], not [{}, {}]",
                                            prev.rows, prev.cols, S, C));
  // The window [prev | x] of S + T rows, zeros where there is no prior state.
  Mat win(S + T, C);
  if (!prev.v.empty()) std::copy(prev.v.begin(), prev.v.end(), win.v.begin());
  std::copy(x.v.begin(), x.v.end(), win.v.begin() + S * C);
  Mat y(T, C);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t c = 0; c < C; ++c) {
      float acc = 0;
      for (std::int64_t i = 0; i < K; ++i) acc += w.row(c)[i] * win.row(S + t - (K - 1) + i)[c];
      y.row(t)[c] = acc / (1.0f + std::exp(-acc));
    }
  next = Mat(S, C);
  std::copy(win.v.begin() + T * C, win.v.end(), next.v.begin());
  return y;
}

Mat l2norm(const Mat& x, int width, float scale, float eps) {
  Mat y = x;
  for (std::int64_t r = 0; r < y.rows; ++r)
    for (std::int64_t h = 0; h < y.cols / width; ++h) {
      float* e = y.row(r) + h * width;
      float ss = 0;
      for (int i = 0; i < width; ++i) ss += e[i] * e[i];
      const float inv = 1.0f / std::sqrt(ss + eps);
      for (int i = 0; i < width; ++i) e[i] = e[i] * inv * scale;
    }
  return y;
}

Mat gdn_recurrence(const ModelConfig& cfg, const Mat& q, const Mat& k, const Mat& v, const Mat& g,
                   const Mat& beta, std::vector<float>& state) {
  const int nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  const std::size_t slot = std::size_t(dk) * std::size_t(dv);
  if (state.empty()) state.assign(slot * std::size_t(nv), 0.0f);
  Mat o(q.rows, std::int64_t(nv) * dv);
  std::vector<float> m(std::size_t(dv), 0.0f);
  for (std::int64_t t = 0; t < q.rows; ++t)
    for (int h = 0; h < nv; ++h) {
      float* S = state.data() + std::size_t(h) * slot;
      const float* qh = q.row(t) + std::int64_t(cfg.gdn_key_head(h)) * dk;
      const float* kh = k.row(t) + std::int64_t(cfg.gdn_key_head(h)) * dk;
      const float* vh = v.row(t) + std::int64_t(h) * dv;
      const float decay = std::exp(g.row(t)[h]), b = beta.row(t)[h];
      for (std::size_t e = 0; e < slot; ++e) S[e] *= decay;
      std::fill(m.begin(), m.end(), 0.0f);
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) m[std::size_t(j)] += S[std::size_t(i) * dv + j] * kh[i];
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) S[std::size_t(i) * dv + j] += kh[i] * b * (vh[j] - m[std::size_t(j)]);
      float* oh = o.row(t) + std::int64_t(h) * dv;
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) oh[j] += S[std::size_t(i) * dv + j] * qh[i];
    }
  return o;
}

Mat gdn_state_stage(const ModelConfig& cfg, const std::vector<float>& state) {
  const std::int64_t nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  const bool key_major = cfg.gdn_state_layout == GdnStateLayout::key_major;
  Mat st(key_major ? nv * dk : nv * dv, key_major ? dv : dk);
  for (std::int64_t h = 0; h < nv; ++h)
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; ++j)
        st.v[std::size_t(key_major ? (h * dk + i) * dv + j : (h * dv + j) * dk + i)] =
            state[std::size_t((h * dk + i) * dv + j)];
  return st;
}

std::vector<float> gdn_state_from_stage(const ModelConfig& cfg, const Mat& stage) {
  const std::int64_t nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
  if (stage.v.size() != std::size_t(nv * dk * dv)) throw std::invalid_argument("cpu gdn: prior state size");
  const bool key_major = cfg.gdn_state_layout == GdnStateLayout::key_major;
  std::vector<float> s(stage.v.size());
  for (std::int64_t h = 0; h < nv; ++h)
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; ++j)
        s[std::size_t((h * dk + i) * dv + j)] =
            stage.v[std::size_t(key_major ? (h * dk + i) * dv + j : (h * dv + j) * dk + i)];
  return s;
}

Mat gated_rmsnorm(const Mat& o, const Mat& z, std::span<const float> w, float eps, int width) {
  Mat y = o;
  for (std::int64_t r = 0; r < y.rows; ++r)
    for (std::int64_t h = 0; h < y.cols / width; ++h) {
      float* e = y.row(r) + h * width;
      const float* ze = z.row(r) + h * width;
      float ss = 0;
      for (int i = 0; i < width; ++i) ss += e[i] * e[i];
      const float inv = 1.0f / std::sqrt(ss / float(width) + eps);
      for (int i = 0; i < width; ++i) e[i] = w[std::size_t(i)] * (e[i] * inv) * (ze[i] * sigmoidf(ze[i]));
    }
  return y;
}

}  // namespace ds::cpu
