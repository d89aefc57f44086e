#include "engine_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "loaders/quant.h"
#include "parallel.h"

namespace ds::ref {

namespace {

float f16_round(float v) { return f16_to_f32(f32_to_f16(v)); }

// a * b + acc in f32 with one rounding: the product of two floats is exact in double, so the
// only roundings are the double sum's (below f32's precision) and the final one to f32.
inline float fma_f32(float a, float b, float acc) { return float(double(a) * double(b) + double(acc)); }

// Q8_K (ggml's quantize_row_q8_K_ref): per block of 256, the scale maps the element of largest
// magnitude to -127 (keeping its sign), d = 1 / that scale, values d * q.
void q8_k_row(const double* x, double* y, std::int64_t n) {
  constexpr std::int64_t kBlock = 256;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    float amax = 0, max = 0;
    for (std::int64_t j = b; j < b + kBlock; ++j) {
      const float v = float(x[j]);
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        max = v;
      }
    }
    if (amax == 0) {
      std::fill(y + b, y + b + kBlock, 0.0);
      continue;
    }
    const float iscale = -127.f / max, d = 1 / iscale;
    for (std::int64_t j = b; j < b + kBlock; ++j) {
      const int q = std::min(127, int(std::nearbyint(iscale * float(x[j]))));
      y[j] = double(d * float(q));
    }
  }
}

// Q8_0 as ggml's CPU backend quantizes a matmul's activations (ties to even), dequantized as ggml
// does: one definition of each (loaders/quant.h).
void q8_0_row(const double* x, double* y, std::int64_t n) {
  std::vector<float> in(x, x + n), out(static_cast<std::size_t>(n));
  const auto blocks = quantize_q8_0(in.data(), n, Ties::to_even);
  dequantize(GgmlType::Q8_0, blocks.data(), out.data(), n);
  for (std::int64_t i = 0; i < n; ++i) y[i] = out[std::size_t(i)];
}

// What ggml's CPU backend converts a matmul's activations to for weights of `file_type`.
Numerics::ActQuant ggml_vec_dot_quant(std::string_view file_type) {
  static constexpr std::string_view q8_0[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL"};
  static constexpr std::string_view q8_k[] = {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"};
  if (std::find(std::begin(q8_0), std::end(q8_0), file_type) != std::end(q8_0))
    return Numerics::ActQuant::q8_0;
  if (std::find(std::begin(q8_k), std::end(q8_k), file_type) != std::end(q8_k))
    return Numerics::ActQuant::q8_k;
  return Numerics::ActQuant::none;
}

// ggml's dot product of Q4_1 or Q5_1 weights (w = d_w q + m per block of 32) with Q8_1 activations
// (Q8_0's values, plus s = d_a * sum(q) stored as f16) adds m * s for each block, where the values
// give m * f16(d_a) * sum(q). Each block's minimum m is the block's smallest dequantized weight (the
// quantizer maps the minimum to q = 0). Adds, to every output, sum over blocks of m times the
// difference, for the activations' rows x (not yet quantized).
void add_q8_1_block_sums(const Tensor& x, const Matrix& w, Tensor& y) {
  constexpr std::int64_t kBlock = 32;
  const std::int64_t rows = x.dim(0), in = w.in(), out = w.out(), blocks = in / kBlock;
  std::vector<double> diff(static_cast<std::size_t>(rows * blocks));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const double* xb = x.data<double>() + r * in + b * kBlock;
      float amax = 0;
      for (std::int64_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(float(xb[j])));
      const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
      float sum = 0;
      for (std::int64_t j = 0; j < kBlock; ++j) sum += std::nearbyint(float(xb[j]) * id);
      diff[std::size_t(r * blocks + b)] = double(f16_round(d * sum)) - double(f16_round(d)) * double(sum);
    }
  std::vector<float> wr;
  for (std::int64_t o = 0; o < out; ++o) {
    w.row(o, wr);
    for (std::int64_t b = 0; b < blocks; ++b) {
      const float m = *std::min_element(wr.begin() + b * kBlock, wr.begin() + (b + 1) * kBlock);
      for (std::int64_t r = 0; r < rows; ++r)
        y.data<double>()[r * out + o] += double(m) * diff[std::size_t(r * blocks + b)];
    }
  }
}

}  // namespace

Tensor engine_activations(const Tensor& x, Numerics::ActQuant q, std::string_view file_type, DType w_dtype) {
  if (q == Numerics::ActQuant::ggml) {
    q = ggml_vec_dot_quant(file_type);
    if (q == Numerics::ActQuant::none) {
      const bool f16 = file_type == "F16" || (file_type.empty() && w_dtype == DType::f16);
      const bool bf16 = file_type == "BF16" || (file_type.empty() && w_dtype == DType::bf16);
      return f16 ? round_stage(x, DType::f16) : bf16 ? round_stage(x, DType::bf16) : x;
    }
  }
  if (q == Numerics::ActQuant::none) return x;
  const std::int64_t width = x.dim(x.rank() - 1), block = q == Numerics::ActQuant::q8_0 ? 32 : 256;
  if (width % block)
    throw std::invalid_argument(fmt::format("numerics act-quant={}: a row of {} is not whole blocks of {}",
                                            q == Numerics::ActQuant::q8_0 ? "q8_0" : "q8_k", width, block));
  Tensor y(DType::f64, x.shape());
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    const double* xr = x.data<double>() + r * width;
    double* yr = y.data<double>() + r * width;
    if (q == Numerics::ActQuant::q8_0)
      q8_0_row(xr, yr, width);
    else
      q8_k_row(xr, yr, width);
  }
  return y;
}

Tensor numerics_linear(const Tensor& x, const Matrix& w, const Tensor* bias, const Numerics& n,
                       std::string_view file_type) {
  if (n.act_quant == Numerics::ActQuant::none && n.accum == Numerics::Accum::exact) return linear(x, w, bias);
  const Tensor xq = engine_activations(x, n.act_quant, file_type, w.t ? w.t->dtype() : DType::f32);
  Tensor y = n.accum == Numerics::Accum::f32 ? linear_f32(xq, w, bias) : linear(xq, w, bias);
  if (n.act_quant == Numerics::ActQuant::ggml && (file_type == "Q4_1" || file_type == "Q5_1"))
    add_q8_1_block_sums(x, w, y);
  return y;
}

Tensor linear_f32(const Tensor& x, const Matrix& w, const Tensor* bias) {
  if (w.rank() != 2 || x.rank() != 2 || x.dim(1) != w.in())
    throw std::invalid_argument(
        fmt::format("linear: incompatible shapes {} and {}", shape_str(x.shape()), shape_str(w.shape())));
  const std::int64_t rows = x.dim(0), in = w.in(), out = w.out();
  std::vector<float> xf(std::size_t(rows * in));
  for (std::int64_t i = 0; i < rows * in; ++i) xf[std::size_t(i)] = float(x.data<double>()[i]);
  Tensor y(DType::f64, {rows, out});
  parallel_for(out, rows * out * in, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> wr;
    for (std::int64_t o = b; o < e; ++o) {
      w.row(o, wr);
      const float bo = bias ? float(bias->data<double>()[o]) : 0.f;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = xf.data() + r * in;
        float acc = 0;
        for (std::int64_t i = 0; i < in; ++i) acc = fma_f32(wr[std::size_t(i)], xr[i], acc);
        y.data<double>()[r * out + o] = double(acc + bo);
      }
    }
  });
  return y;
}

Tensor engine_rope(const Tensor& x, int head_dim, int rotary_dim, int pos0, double theta, RopeMode mode,
                   std::span<const double> freq_factors, Numerics::RopeAngles angles) {
  if (angles == Numerics::RopeAngles::exact)
    return rope(x, head_dim, rotary_dim, pos0, theta, mode, freq_factors);
  if (x.dim(1) % head_dim || rotary_dim > head_dim || rotary_dim % 2)
    throw std::invalid_argument(
        fmt::format("rope: width {} head_dim {} rotary_dim {}", x.dim(1), head_dim, rotary_dim));
  const std::int64_t T = x.dim(0), heads = x.dim(1) / head_dim;
  const int half = rotary_dim / 2;
  const auto factor = [&](int i) { return freq_factors.empty() ? 1.f : float(freq_factors[std::size_t(i)]); };
  // Angles of every pair for one position, in f32 as the engine forms them.
  std::vector<float> ang(static_cast<std::size_t>(half));
  const auto fill_angles = [&](std::int64_t p) {
    if (angles == Numerics::RopeAngles::f32_recurrence) {
      // llama.cpp's rope cache: theta starts at the position and is multiplied by
      // powf(base, -2/n_dims) once per pair; each pair's angle is that over its factor.
      const float scale = std::pow(float(theta), -2.0f / float(rotary_dim));
      float t = float(p);
      for (int i = 0; i < half; ++i) {
        ang[std::size_t(i)] = t / factor(i);
        t *= scale;
      }
    } else {
      // HF transformers: inv_freq = 1 / base^(2i/d) in f32 (over its factor), times the f32 position.
      for (int i = 0; i < half; ++i) {
        const float inv = (1.0f / std::pow(float(theta), float(2 * i) / float(rotary_dim))) / factor(i);
        ang[std::size_t(i)] = float(p) * inv;
      }
    }
  };
  Tensor y = x;
  double* ys = y.data<double>();
  const double* xs = x.data<double>();
  for (std::int64_t t = 0; t < T; ++t) {
    fill_angles(pos0 + t);
    for (std::int64_t h = 0; h < heads; ++h) {
      const double* xh = xs + (t * heads + h) * head_dim;
      double* yh = ys + (t * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float c = std::cos(ang[std::size_t(i)]), s = std::sin(ang[std::size_t(i)]);
        const int a = mode == RopeMode::neox ? i : 2 * i;
        const int b = mode == RopeMode::neox ? i + half : 2 * i + 1;
        yh[a] = xh[a] * c - xh[b] * s;
        yh[b] = xh[b] * c + xh[a] * s;
      }
    }
  }
  return y;
}

Tensor engine_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int n_heads,
                        int n_kv_heads, int head_dim, int pos0, AttnScale scale, int window,
                        const Numerics& n) {
  const std::int64_t T = q.dim(0), P = k_cache.dim(0);
  if (q.dim(1) != std::int64_t(n_heads) * head_dim || k_cache.dim(1) != std::int64_t(n_kv_heads) * head_dim ||
      v_cache.shape() != k_cache.shape() || P < pos0 + T)
    throw std::invalid_argument(fmt::format("attention: incompatible shapes {} and {}", shape_str(q.shape()),
                                            shape_str(k_cache.shape())));
  const bool f32 = n.accum == Numerics::Accum::f32;
  const bool f16_kv = n.kv_cache == DType::f16;
  const bool flash = n.attention == Numerics::Attention::f16_flash;
  const auto sum_of = [&](auto&& term, std::int64_t count) {
    if (f32) {
      float acc = 0;
      for (std::int64_t i = 0; i < count; ++i) acc = float(double(acc) + term(i));
      return double(acc);
    }
    double acc = 0;
    for (std::int64_t i = 0; i < count; ++i) acc += term(i);
    return acc;
  };
  const int group = n_heads / n_kv_heads;
  const float mult = float(scale.divide ? 1.0 / scale.value : scale.value);
  const std::int64_t kv_w = std::int64_t(n_kv_heads) * head_dim, q_w = std::int64_t(n_heads) * head_dim;
  Tensor o(DType::f64, {T, q_w});
  std::vector<double> qh(static_cast<std::size_t>(head_dim)), p(static_cast<std::size_t>(P));
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t last = pos0 + t;
    const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, last - window + 1) : 0;
    for (int h = 0; h < n_heads; ++h) {
      const int kh = h / group;
      for (int i = 0; i < head_dim; ++i) {
        const double v = q.data<double>()[t * q_w + h * head_dim + i];
        qh[std::size_t(i)] = f16_kv ? f16_round(float(v)) : v;
      }
      const auto score = [&](std::int64_t j) {
        const double* kj = k_cache.data<double>() + j * kv_w + kh * head_dim;
        const double dot = sum_of([&](std::int64_t i) { return qh[std::size_t(i)] * kj[i]; }, head_dim);
        return f32 ? double(float(dot) * mult) : (scale.divide ? dot / scale.value : dot * scale.value);
      };
      double* oh = o.data<double>() + t * q_w + h * head_dim;
      if (flash) {
        // Online softmax over the keys in order; the value accumulator is f16, rescaled (in f16)
        // whenever a new maximum arrives, then divided by the f32 sum at the end.
        float M = -INFINITY, S = 0;
        std::vector<float> vkq(static_cast<std::size_t>(head_dim), 0.f);
        for (std::int64_t j = first; j <= last; ++j) {
          const float s = float(score(j));
          float ms = 1, vs = 1;
          if (s > M) {
            const float old = M;
            M = s;
            ms = std::exp(old - M);
            for (float& e : vkq) e = f16_round(e * ms);
          } else {
            vs = std::exp(s - M);
          }
          const double* vj = v_cache.data<double>() + j * kv_w + kh * head_dim;
          for (int i = 0; i < head_dim; ++i)
            vkq[std::size_t(i)] = f16_round(vkq[std::size_t(i)] + float(vj[i]) * vs);
          S = S * ms + vs;
        }
        for (int i = 0; i < head_dim; ++i) oh[i] = double(vkq[std::size_t(i)] * (1.0f / S));
        continue;
      }
      double mx = -INFINITY;
      for (std::int64_t j = first; j <= last; ++j) mx = std::max(mx, p[std::size_t(j)] = score(j));
      double sum = 0;
      for (std::int64_t j = first; j <= last; ++j) {
        const double e = std::exp(p[std::size_t(j)] - mx);
        p[std::size_t(j)] = f32 ? double(float(e)) : e;
        sum += p[std::size_t(j)];
      }
      for (std::int64_t j = first; j <= last; ++j) {
        double w = p[std::size_t(j)] / sum;
        if (f32) w = float(w);
        p[std::size_t(j)] = f16_kv ? f16_round(float(w)) : w;
      }
      for (int i = 0; i < head_dim; ++i)
        oh[i] = sum_of(
            [&](std::int64_t k) {
              const std::int64_t j = first + k;
              return p[std::size_t(j)] * v_cache.data<double>()[j * kv_w + kh * head_dim + i];
            },
            last - first + 1);
    }
  }
  return o;
}

Tensor numerics_rmsnorm(const Tensor& x, const Tensor& w, double eps, bool plus_one, int width,
                        const Numerics& n) {
  if (n.accum != Numerics::Accum::f32) return rmsnorm(x, w, eps, plus_one, width);
  if (x.numel() % width || w.numel() != width)
    throw std::invalid_argument(
        fmt::format("rmsnorm: incompatible shapes {} and {}", shape_str(x.shape()), shape_str(w.shape())));
  Tensor y(DType::f64, x.shape());
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    const double* xr = x.data<double>() + r * width;
    float ss = 0;
    for (int i = 0; i < width; ++i) ss = fma_f32(float(xr[i]), float(xr[i]), ss);
    const float inv = 1.0f / std::sqrt(ss / float(width) + float(eps));
    for (int i = 0; i < width; ++i) {
      const float wi = float(w.data<double>()[i]);
      y.data<double>()[r * width + i] = double((float(xr[i]) * inv) * (plus_one ? 1.0f + wi : wi));
    }
  }
  return y;
}

Tensor numerics_layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Numerics& n) {
  if (n.accum != Numerics::Accum::f32) return layernorm(x, w, b, eps);
  const std::int64_t width = x.dim(x.rank() - 1);
  if (w.numel() != width || b.numel() != width)
    throw std::invalid_argument(
        fmt::format("layernorm: incompatible shapes {} and {}", shape_str(x.shape()), shape_str(w.shape())));
  Tensor y(DType::f64, x.shape());
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    const double* xr = x.data<double>() + r * width;
    float sum = 0, var = 0;
    for (std::int64_t i = 0; i < width; ++i) sum += float(xr[i]);
    const float mean = sum / float(width);
    for (std::int64_t i = 0; i < width; ++i) var = fma_f32(float(xr[i]) - mean, float(xr[i]) - mean, var);
    const float inv = 1.0f / std::sqrt(var / float(width) + float(eps));
    for (std::int64_t i = 0; i < width; ++i)
      y.data<double>()[r * width + i] = double(
          fma_f32((float(xr[i]) - mean) * inv, float(w.data<double>()[i]), float(b.data<double>()[i])));
  }
  return y;
}

Tensor gelu_f16_table(const Tensor& x) {
  // The table's entries are the tanh approximation evaluated in f32 (not in f64): rounded to f16,
  // the two differ by one f16 ULP on a few inputs in a thousand.
  const auto gelu_f32 = [](float v) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f, kCoefA = 0.044715f;
    return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * v * (1.0f + kCoefA * v * v)));
  };
  Tensor y(DType::f64, x.shape());
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const double v = x.data<double>()[i];
    y.data<double>()[i] = v <= -10 ? 0.0 : v >= 10 ? v : double(f16_round(gelu_f32(f16_round(float(v)))));
  }
  return y;
}

}  // namespace ds::ref
