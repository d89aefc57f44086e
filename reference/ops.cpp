#include "ops.h"

#include "linear_kernel.h"
#include "parallel.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace ds::ref {

namespace {
void require(bool ok, const char* op, const Tensor& a, const Tensor& b) {
  if (!ok)
    throw std::invalid_argument(
        fmt::format("{}: incompatible shapes {} and {}", op, shape_str(a.shape()), shape_str(b.shape())));
}
Tensor like(const Tensor& x) { return Tensor(DType::f64, x.shape()); }
}  // namespace

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// log1p(exp(x)) without overflow for large x.
double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

Tensor rmsnorm(const Tensor& x, const Tensor& w, double eps, bool plus_one, int width) {
  require(x.numel() % width == 0 && w.numel() == width, "rmsnorm", x, w);
  Tensor y = like(x);
  const double* xs = x.data<double>();
  const double* ws = w.data<double>();
  double* ys = y.data<double>();
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    const double* xr = xs + r * width;
    double ss = 0;
    for (int i = 0; i < width; ++i) ss += xr[i] * xr[i];
    const double inv = 1.0 / std::sqrt(ss / width + eps);
    for (int i = 0; i < width; ++i) ys[r * width + i] = xr[i] * inv * (plus_one ? 1.0 + ws[i] : ws[i]);
  }
  return y;
}

Tensor layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const std::int64_t width = x.dim(x.rank() - 1);
  require(w.numel() == width && b.numel() == width, "layernorm", x, w);
  Tensor y = like(x);
  const double *xs = x.data<double>(), *ws = w.data<double>(), *bs = b.data<double>();
  double* ys = y.data<double>();
  for (std::int64_t r = 0, rows = x.numel() / width; r < rows; ++r) {
    const double* xr = xs + r * width;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < width; ++i) mean += xr[i];
    mean /= double(width);
    for (std::int64_t i = 0; i < width; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(width);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (std::int64_t i = 0; i < width; ++i) ys[r * width + i] = (xr[i] - mean) * inv * ws[i] + bs[i];
  }
  return y;
}

namespace {
using LinearKernel = void (*)(const detail::LinearArgs&, std::int64_t, std::int64_t);

// The widest build of the kernel this CPU runs; every build gives the same bits.
LinearKernel pick_linear_kernel() {
#if defined(DS_LINEAR_X86)
  if (__builtin_cpu_supports("avx2")) return detail::linear_cols_avx2;
#endif
  return detail::linear_cols_baseline;
}
}  // namespace

// Every output element is one dot product in a fixed order (linear_kernel.cpp): four
// interleaved partial sums (element i goes to lane i % 4), combined as (l0 + l1) + (l2 + l3),
// then the tail. One dependency chain per lane keeps the adds from waiting on each other, and
// the order is the same for every thread count, every kernel build and every call.
void Matrix::row(std::int64_t o, std::vector<float>& out) const {
  const std::int64_t n = in();
  out.resize(std::size_t(n));
  if (q) {
    q->row(o, out.data());
  } else if (t->dtype() == DType::f32) {
    std::copy_n(t->data<float>() + o * n, n, out.begin());
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[std::size_t(i)] = float(t->at(o * n + i));
  }
}

Tensor linear(const Tensor& x, const Matrix& w, const Tensor* bias) {
  if (w.rank() != 2 || x.rank() != 2 || x.dim(1) != w.in())
    throw std::invalid_argument(
        fmt::format("linear: incompatible shapes {} and {}", shape_str(x.shape()), shape_str(w.shape())));
  const std::int64_t in = w.in(), out = w.out();
  if (bias && (bias->numel() != out || bias->dtype() != DType::f64))
    throw std::invalid_argument(fmt::format("linear bias: incompatible shapes {} and {}",
                                            shape_str(w.shape()), shape_str(bias->shape())));
  const DType wtype = w.t ? w.t->dtype() : DType::f32;
  if (wtype != DType::f64 && wtype != DType::f32 && wtype != DType::f16 && wtype != DType::bf16)
    throw std::invalid_argument(
        fmt::format("linear: weight dtype {} (expected f64, f32, f16 or bf16)", dtype_name(wtype)));
  const std::int64_t rows = x.dim(0);
  Tensor y(DType::f64, {rows, out});
  const detail::LinearArgs args{.x = x.data<double>(),
                                .w = w.t ? w.t->raw() : nullptr,
                                .wtype = wtype,
                                .q = w.q,
                                .bias = bias ? bias->data<double>() : nullptr,
                                .y = y.data<double>(),
                                .rows = rows,
                                .in = in,
                                .out = out};
  static const LinearKernel kernel = pick_linear_kernel();
  // Threads own disjoint output columns: every element keeps the serial summation order.
  parallel_for(out, rows * out * in, [&](std::int64_t b, std::int64_t e) { kernel(args, b, e); });
  return y;
}

Tensor rope(const Tensor& x, int head_dim, int rotary_dim, int pos0, double theta, RopeMode mode,
            std::span<const double> freq_factors) {
  if (x.dim(1) % head_dim || rotary_dim > head_dim || rotary_dim % 2)
    throw std::invalid_argument(
        fmt::format("rope: width {} head_dim {} rotary_dim {}", x.dim(1), head_dim, rotary_dim));
  Tensor y = x;
  const std::int64_t T = x.dim(0), heads = x.dim(1) / head_dim;
  const int half = rotary_dim / 2;
  double* ys = y.data<double>();
  const double* xs = x.data<double>();
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < heads; ++h) {
      const double* xh = xs + (t * heads + h) * head_dim;
      double* yh = ys + (t * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        double inv_freq = std::pow(theta, -2.0 * i / rotary_dim);
        if (!freq_factors.empty()) inv_freq /= freq_factors[std::size_t(i)];
        const double ang = double(pos0 + t) * inv_freq;
        const double c = std::cos(ang), s = std::sin(ang);
        const int a = mode == RopeMode::neox ? i : 2 * i;
        const int b = mode == RopeMode::neox ? i + half : 2 * i + 1;
        yh[a] = xh[a] * c - xh[b] * s;
        yh[b] = xh[b] * c + xh[a] * s;
      }
    }
  return y;
}

std::vector<double> llama3_freq_factors(int rotary_dim, double theta, double factor, double low_freq_factor,
                                        double high_freq_factor, double original_context) {
  std::vector<double> f(std::size_t(rotary_dim / 2), 1.0);
  const double low_wavelen = original_context / low_freq_factor,
               high_wavelen = original_context / high_freq_factor;
  for (int i = 0; i < rotary_dim / 2; ++i) {
    const double wavelen = 2 * M_PI * std::pow(theta, 2.0 * i / rotary_dim);
    if (wavelen > low_wavelen) {
      f[std::size_t(i)] = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f[std::size_t(i)] = 1.0 / ((1 - smooth) / factor + smooth);
    }
  }
  return f;
}

Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int n_heads, int n_kv_heads,
                 int head_dim, int pos0, AttnScale scale, int window) {
  const std::int64_t T = q.dim(0), P = k_cache.dim(0);
  require(q.dim(1) == std::int64_t(n_heads) * head_dim &&
              k_cache.dim(1) == std::int64_t(n_kv_heads) * head_dim && v_cache.shape() == k_cache.shape() &&
              P >= pos0 + T,
          "attention", q, k_cache);
  const int group = n_heads / n_kv_heads;
  Tensor o(DType::f64, {T, std::int64_t(n_heads) * head_dim});
  const double *qs = q.data<double>(), *ks = k_cache.data<double>(), *vs = v_cache.data<double>();
  double* os = o.data<double>();
  std::vector<double> p(std::size_t(P), 0.0);
  const std::int64_t kv_w = std::int64_t(n_kv_heads) * head_dim, q_w = std::int64_t(n_heads) * head_dim;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t last = pos0 + t;  // causal: keys first..last
    const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, last - window + 1) : 0;
    for (int h = 0; h < n_heads; ++h) {
      const int kh = h / group;
      const double* qh = qs + t * q_w + h * head_dim;
      double mx = -INFINITY;
      for (std::int64_t j = first; j <= last; ++j) {
        const double* kj = ks + j * kv_w + kh * head_dim;
        double s = 0;
        for (int i = 0; i < head_dim; ++i) s += qh[i] * kj[i];
        p[std::size_t(j)] = scale.divide ? s / scale.value : s * scale.value;
        mx = std::max(mx, p[std::size_t(j)]);
      }
      double sum = 0;
      for (std::int64_t j = first; j <= last; ++j)
        sum += (p[std::size_t(j)] = std::exp(p[std::size_t(j)] - mx));
      double* oh = os + t * q_w + h * head_dim;
      for (std::int64_t j = first; j <= last; ++j) {
        const double w = p[std::size_t(j)] / sum;
        const double* vj = vs + j * kv_w + kh * head_dim;
        for (int i = 0; i < head_dim; ++i) oh[i] += w * vj[i];
      }
    }
  }
  return o;
}

Tensor silu_mul(const Tensor& gate, const Tensor& up) {
  require(gate.shape() == up.shape(), "silu_mul", gate, up);
  Tensor y = like(gate);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    y.data<double>()[i] = silu(gate.data<double>()[i]) * up.data<double>()[i];
  return y;
}

Tensor gelu_new(const Tensor& x) {
  Tensor y = like(x);
  const double c = std::sqrt(2.0 / M_PI);
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const double v = x.data<double>()[i];
    y.data<double>()[i] = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
  }
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  require(a.shape() == b.shape(), "mul", a, b);
  Tensor y = like(a);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    y.data<double>()[i] = a.data<double>()[i] * b.data<double>()[i];
  return y;
}

Tensor sigmoid_mul(const Tensor& x, const Tensor& gate) {
  require(x.shape() == gate.shape(), "sigmoid_mul", x, gate);
  Tensor y = like(x);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    y.data<double>()[i] = x.data<double>()[i] * sigmoid(gate.data<double>()[i]);
  return y;
}

Tensor take_columns(const Tensor& x, int group_width, int begin, int width) {
  require(x.rank() == 2 && x.dim(1) % group_width == 0 && begin + width <= group_width, "take_columns", x, x);
  const std::int64_t T = x.dim(0), groups = x.dim(1) / group_width;
  Tensor y(DType::f64, {T, groups * width});
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t g = 0; g < groups; ++g)
      for (int i = 0; i < width; ++i)
        y.data<double>()[(t * groups + g) * width + i] =
            x.data<double>()[t * x.dim(1) + g * group_width + begin + i];
  return y;
}

Tensor add(const Tensor& a, const Tensor& b) {
  require(a.shape() == b.shape(), "add", a, b);
  Tensor y = like(a);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    y.data<double>()[i] = a.data<double>()[i] + b.data<double>()[i];
  return y;
}

Tensor embed(std::span<const std::int32_t> tokens, const Matrix& table) {
  const std::int64_t V = table.out(), D = table.in();
  std::vector<float> row;
  Tensor y(DType::f64, {std::int64_t(tokens.size()), D});
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= V)
      throw std::out_of_range(fmt::format("token id {} outside the vocabulary of {}", tokens[t], V));
    double* yr = y.data<double>() + std::int64_t(t) * D;
    const std::int64_t base = std::int64_t(tokens[t]) * D;
    if (table.t && table.t->dtype() == DType::f64) {
      for (std::int64_t i = 0; i < D; ++i) yr[i] = table.t->data<double>()[base + i];
    } else {
      table.row(tokens[t], row);
      for (std::int64_t i = 0; i < D; ++i) yr[i] = row[std::size_t(i)];
    }
  }
  return y;
}

Tensor round_stage(const Tensor& x, DType storage) {
  if (storage == DType::f64) return x;
  Tensor y = x;
  for (std::int64_t i = 0; i < y.numel(); ++i) y.data<double>()[i] = round_to(storage, y.data<double>()[i]);
  return y;
}

}  // namespace ds::ref
