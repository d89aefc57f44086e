#include "cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "parallel.h"

namespace ds::cpu {

Mat rmsnorm(const Mat& x, std::span<const float> w, float eps, int width) {
  Mat y(x.rows, x.cols);
  const std::int64_t groups = x.cols / width;
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* xr = x.row(r) + g * width;
      float ss = 0;
      for (int i = 0; i < width; ++i) ss += xr[i] * xr[i];
      const float inv = 1.0f / std::sqrt(ss / float(width) + eps);
      for (int i = 0; i < width; ++i) y.row(r)[g * width + i] = xr[i] * inv * w[std::size_t(i)];
    }
  return y;
}

Mat layernorm(const Mat& x, std::span<const float> w, std::span<const float> b, float eps, int ddof) {
  Mat y(x.rows, x.cols);
  const float n = float(x.cols);
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const float* xr = x.row(r);
    float mean = 0, var = 0;
    for (std::int64_t i = 0; i < x.cols; ++i) mean += xr[i];
    mean /= n;
    for (std::int64_t i = 0; i < x.cols; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.0f / std::sqrt(var / (n - float(ddof)) + eps);
    for (std::int64_t i = 0; i < x.cols; ++i)
      y.row(r)[i] = (xr[i] - mean) * inv * w[std::size_t(i)] + b[std::size_t(i)];
  }
  return y;
}

WeightMat::WeightMat(const Tensor& t)
    : rows(t.rank() == 1 ? 1 : t.dim(0)),
      cols(t.rank() == 1 ? t.dim(0) : t.numel() / t.dim(0)),
      data_(t.raw()),
      dtype_(t.dtype()) {
  if (!is_float(dtype_)) throw std::invalid_argument("cpu candidate: a weight that is not floating point");
}

WeightMat::WeightMat(const QuantMatrix& q)
    : rows(q.shape.front()), cols(ds::numel(q.shape) / q.shape.front()), quant_(&q) {}

const float* WeightMat::row(std::int64_t r, std::vector<float>& scratch) const {
  const std::size_t at = std::size_t(r * cols), n = std::size_t(cols);
  if (dtype_ == DType::f32 && quant_ == nullptr) return reinterpret_cast<const float*>(data_) + at;
  scratch.resize(n);
  float* out = scratch.data();
  if (quant_) {
    // A stack's row [out, in] is `out` quantized rows.
    const std::int64_t per = cols / quant_->cols();
    for (std::int64_t k = 0; k < per; ++k) quant_->row(r * per + k, out + k * quant_->cols());
    return out;
  }
  // One loop per dtype, chosen once per row: memcpy reads an element whatever the alignment.
  if (dtype_ == DType::f64) {
    for (std::size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, data_ + (at + i) * sizeof d, sizeof d);
      out[i] = float(d);
    }
    return out;
  }
  const std::byte* bits = data_ + at * sizeof(std::uint16_t);
  auto each = [&](auto convert) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t b;
      std::memcpy(&b, bits + i * sizeof b, sizeof b);
      out[i] = convert(b);
    }
  };
  if (dtype_ == DType::f16)
    each([](std::uint16_t b) { return f16_to_f32(b); });
  else
    each([](std::uint16_t b) { return bf16_to_f32(b); });
  return out;
}

Mat WeightMat::to_mat() const {
  Mat m(rows, cols);
  std::vector<float> scratch;
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(row(r, scratch), cols, m.row(r));
  return m;
}

namespace {

// Tokens ride in the lanes of a vector, kTile of them per register tile: every lane runs one
// output's sum in exactly the scalar loop's order (acc = acc + w[i] * x[i], each rounded to f32,
// never fused), so the result has the bits of the plain loop at a fraction of its time.
typedef float Lanes __attribute__((vector_size(16)));
constexpr std::int64_t kLanes = 4, kVectors = 8, kTile = kLanes * kVectors;

float dot_in_order(const float* w, const float* x, std::int64_t n) {
  float acc = 0;
  for (std::int64_t i = 0; i < n; ++i) acc += w[i] * x[i];
  return acc;
}

// Outputs [o_begin, o_end) of every row: whole tiles of kTile tokens from `xt` (the input
// transposed in tiles, [T / kTile][n][kTile]), the rows past the last whole tile one by one.
void linear_outputs(const Mat& x, const std::vector<float>& xt, const WeightMat& w,
                    std::span<const float> bias, Mat& y, std::int64_t o_begin, std::int64_t o_end) {
  const std::int64_t n = x.cols, tiles = x.rows / kTile;
  std::vector<float> scratch;  // a converted weight row (none for f32 weights)
  for (std::int64_t t = 0; t < tiles; ++t) {
    const float* xs = xt.data() + t * n * kTile;
    for (std::int64_t o = o_begin; o < o_end; ++o) {
      const float* wr = w.row(o, scratch);
      Lanes acc[kVectors] = {};
      for (std::int64_t i = 0; i < n; ++i) {
        const float wi = wr[i];
        for (std::int64_t v = 0; v < kVectors; ++v) {
          Lanes xv;
          std::memcpy(&xv, xs + i * kTile + v * kLanes, sizeof xv);
          acc[v] = acc[v] + wi * xv;
        }
      }
      const float b = bias.empty() ? 0.0f : bias[std::size_t(o)];
      for (std::int64_t v = 0; v < kVectors; ++v)
        for (std::int64_t k = 0; k < kLanes; ++k) y.row(t * kTile + v * kLanes + k)[o] = acc[v][k] + b;
    }
  }
  // Each weight row once, for every row past the tiles.
  if (tiles * kTile < x.rows)
    for (std::int64_t o = o_begin; o < o_end; ++o) {
      const float* wr = w.row(o, scratch);
      for (std::int64_t r = tiles * kTile; r < x.rows; ++r)
        y.row(r)[o] = dot_in_order(wr, x.row(r), n) + (bias.empty() ? 0.0f : bias[std::size_t(o)]);
    }
}

}  // namespace

Mat linear(const Mat& x, const WeightMat& w, std::span<const float> bias) {
  if (x.cols != w.cols) throw std::invalid_argument("cpu linear: input width does not match the weight");
  Mat y(x.rows, w.rows);
  const std::int64_t n = x.cols, tiles = x.rows / kTile;
  std::vector<float> xt(std::size_t(tiles * n * kTile));
  for (std::int64_t t = 0; t < tiles; ++t)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < kTile; ++k)
        xt[std::size_t((t * n + i) * kTile + k)] = x.row(t * kTile + k)[i];
  // Outputs split over threads: each output is computed whole by one thread, so the bits do not
  // depend on the thread count.
  parallel_for(w.rows, x.rows * w.rows * n,
               [&](std::int64_t b, std::int64_t e) { linear_outputs(x, xt, w, bias, y, b, e); });
  return y;
}

Mat linear_split_k(const Mat& x, const WeightMat& w, std::span<const float> bias, int splits) {
  if (x.cols != w.cols) throw std::invalid_argument("cpu linear: input width does not match the weight");
  Mat y(x.rows, w.rows);
  const std::int64_t n = x.cols, chunk = (n + splits - 1) / splits;
  std::vector<float> scratch;
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t o = 0; o < w.rows; ++o) {
      const float* wr = w.row(o, scratch);
      float acc = 0;
      for (std::int64_t c0 = 0; c0 < n; c0 += chunk)
        acc += dot_in_order(wr + c0, x.row(r) + c0, std::min(chunk, n - c0));
      y.row(r)[o] = acc + (bias.empty() ? 0.0f : bias[std::size_t(o)]);
    }
  return y;
}

Mat rope(const Mat& x, int head_dim, int rotary_dim, int pos0, float theta, RopeMode mode,
         const std::vector<double>& freq_factors) {
  Mat y = x;
  const int half = rotary_dim / 2;
  const std::int64_t heads = x.cols / head_dim;
  for (std::int64_t t = 0; t < x.rows; ++t)
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* xh = x.row(t) + h * head_dim;
      float* yh = y.row(t) + h * head_dim;
      for (int i = 0; i < half; ++i) {
        const float inv_freq = std::pow(theta, -2.0f * float(i) / float(rotary_dim)) /
                               (freq_factors.empty() ? 1.0f : float(freq_factors[std::size_t(i)]));
        const float ang = float(pos0 + t) * inv_freq;
        const float c = std::cos(ang), s = std::sin(ang);
        const int a = mode == RopeMode::neox ? i : 2 * i;
        const int b = mode == RopeMode::neox ? i + half : 2 * i + 1;
        yh[a] = xh[a] * c - xh[b] * s;
        yh[b] = xh[b] * c + xh[a] * s;
      }
    }
  return y;
}

Mat attention(const Mat& q, const Mat& k_cache, const Mat& v_cache, int n_heads, int n_kv_heads, int head_dim,
              int pos0) {
  Mat o(q.rows, q.cols);
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> p(std::size_t(k_cache.rows));
  for (std::int64_t t = 0; t < q.rows; ++t)
    for (int h = 0; h < n_heads; ++h) {
      const int kh = h / group;
      const float* qh = q.row(t) + h * head_dim;
      const std::int64_t last = pos0 + t;
      float mx = -INFINITY;
      for (std::int64_t j = 0; j <= last; ++j) {
        const float* kj = k_cache.row(j) + kh * head_dim;
        float s = 0;
        for (int i = 0; i < head_dim; ++i) s += qh[i] * kj[i];
        p[std::size_t(j)] = s * scale;
        mx = std::fmax(mx, p[std::size_t(j)]);
      }
      float sum = 0;
      for (std::int64_t j = 0; j <= last; ++j) sum += (p[std::size_t(j)] = std::exp(p[std::size_t(j)] - mx));
      float* oh = o.row(t) + h * head_dim;
      for (std::int64_t j = 0; j <= last; ++j) {
        const float w = p[std::size_t(j)] / sum;
        const float* vj = v_cache.row(j) + kh * head_dim;
        for (int i = 0; i < head_dim; ++i) oh[i] += w * vj[i];
      }
    }
  return o;
}

Mat silu_mul(const Mat& gate, const Mat& up) {
  Mat y(gate.rows, gate.cols);
  for (std::size_t i = 0; i < y.v.size(); ++i) {
    const float g = gate.v[i];
    y.v[i] = g / (1.0f + std::exp(-g)) * up.v[i];
  }
  return y;
}

Mat gelu_tanh(const Mat& x) {
  Mat y(x.rows, x.cols);
  const float k = std::sqrt(2.0f / float(M_PI));
  for (std::size_t i = 0; i < y.v.size(); ++i) {
    const float v = x.v[i];
    y.v[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
  return y;
}

Mat columns(const Mat& x, std::int64_t first, std::int64_t n) {
  if (first < 0 || first + n > x.cols) throw std::invalid_argument("cpu columns: range outside the matrix");
  Mat y(x.rows, n);
  for (std::int64_t r = 0; r < x.rows; ++r) std::copy_n(x.row(r) + first, n, y.row(r));
  return y;
}

Mat add(const Mat& a, const Mat& b) {
  Mat y(a.rows, a.cols);
  for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] = a.v[i] + b.v[i];
  return y;
}

}  // namespace ds::cpu
