#include "tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <stdexcept>

namespace ds {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Shape row_major_strides(const Shape& s) {
  Shape st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

Shape unravel(std::int64_t flat, const Shape& s) {
  Shape c(s.size());
  for (std::size_t i = s.size(); i-- > 0;) {
    c[i] = s[i] ? flat % s[i] : 0;
    flat = s[i] ? flat / s[i] : 0;
  }
  return c;
}

namespace {
double load(const std::byte* p, DType t) {
  switch (t) {
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return f16_to_f32(b);
    }
    case DType::bf16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_to_f32(b);
    }
    case DType::i32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
  return 0;
}

void store(std::byte* p, DType t, double v) {
  switch (t) {
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::f32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
    } break;
    case DType::f16: {
      std::uint16_t b = f64_to_f16(v);
      std::memcpy(p, &b, 2);
    } break;
    case DType::bf16: {
      std::uint16_t b = f64_to_bf16(v);
      std::memcpy(p, &b, 2);
    } break;
    case DType::i32: {
      std::int32_t i = std::int32_t(round_to(DType::i32, v));
      std::memcpy(p, &i, 4);
    } break;
  }
}
}  // namespace

TensorView::TensorView(const std::byte* data, DType dtype, Shape shape, Shape strides)
    : data_(data), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)) {
  if (strides_.size() != shape_.size())
    throw std::invalid_argument("TensorView: strides and shape differ in rank");
}

bool TensorView::contiguous() const { return strides_ == row_major_strides(shape_); }

std::int64_t TensorView::offset_of(std::int64_t flat) const {
  std::int64_t off = 0;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    off += (flat % shape_[i]) * strides_[i];
    flat /= shape_[i];
  }
  return off;
}

double TensorView::at(std::int64_t flat) const {
  return load(data_ + offset_of(flat) * std::int64_t(dtype_size(dtype_)), dtype_);
}

TensorView TensorView::slice_rows(std::int64_t begin, std::int64_t end) const {
  if (shape_.empty() || begin < 0 || end > shape_[0] || begin > end)
    throw std::out_of_range(fmt::format("slice_rows [{}, {}) of {}", begin, end, shape_str(shape_)));
  Shape s = shape_;
  s[0] = end - begin;
  return TensorView(data_ + begin * strides_[0] * std::int64_t(dtype_size(dtype_)), dtype_, s, strides_);
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::size_t(ds::numel(shape_)) * dtype_size(dtype)) {
  for (auto d : shape_)
    if (d < 0) throw std::invalid_argument(fmt::format("negative dimension in {}", shape_str(shape_)));
}

Tensor Tensor::from_view(const TensorView& v, DType dtype) {
  Tensor t(dtype, v.shape());
  if (v.contiguous() && v.dtype() == dtype) {
    std::memcpy(t.raw(), v.raw(), t.nbytes());
    return t;
  }
  if (v.dtype() == dtype) {
    // A layout move only: the bits travel as they are (NaN payloads included).
    const std::size_t es = dtype_size(dtype);
    for (std::int64_t i = 0, n = v.numel(); i < n; ++i)
      std::memcpy(t.raw() + std::size_t(i) * es, v.raw() + std::size_t(v.offset_of(i)) * es, es);
    return t;
  }
  for (std::int64_t i = 0, n = v.numel(); i < n; ++i) t.set(i, v.at(i));
  return t;
}

Tensor Tensor::from_f64(Shape shape, std::span<const double> values, DType dtype) {
  Tensor t(dtype, std::move(shape));
  if (std::int64_t(values.size()) != t.numel())
    throw std::invalid_argument(
        fmt::format("from_f64: {} values for shape {}", values.size(), shape_str(t.shape())));
  for (std::size_t i = 0; i < values.size(); ++i) t.set(std::int64_t(i), values[i]);
  return t;
}

double Tensor::at(std::int64_t flat) const {
  return load(bytes_.data() + flat * std::int64_t(dtype_size(dtype_)), dtype_);
}

void Tensor::set(std::int64_t flat, double v) {
  store(bytes_.data() + flat * std::int64_t(dtype_size(dtype_)), dtype_, v);
}

TensorView Tensor::view() const { return TensorView(raw(), dtype_, shape_, row_major_strides(shape_)); }

Tensor Tensor::to(DType dtype) const { return from_view(view(), dtype); }

std::vector<double> Tensor::to_f64() const {
  std::vector<double> out(static_cast<std::size_t>(numel()));
  for (std::int64_t i = 0; i < numel(); ++i) out[std::size_t(i)] = at(i);
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (ds::numel(shape) != numel())
    throw std::invalid_argument(
        fmt::format("reshape {} -> {}: element counts differ", shape_str(shape_), shape_str(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::rows(std::int64_t begin, std::int64_t end) const {
  return from_view(view().slice_rows(begin, end), dtype_);
}

Tensor Tensor::concat_rows(const Tensor& a, const Tensor& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.dtype_ != b.dtype_ || a.rank() != b.rank() ||
      !std::equal(a.shape_.begin() + 1, a.shape_.end(), b.shape_.begin() + 1))
    throw std::invalid_argument(fmt::format("concat_rows: {} {} vs {} {}", dtype_name(a.dtype_),
                                            shape_str(a.shape_), dtype_name(b.dtype_), shape_str(b.shape_)));
  Shape s = a.shape_;
  s[0] += b.shape_[0];
  Tensor t(a.dtype_, s);
  std::memcpy(t.raw(), a.raw(), a.nbytes());
  std::memcpy(t.raw() + a.nbytes(), b.raw(), b.nbytes());
  return t;
}

}  // namespace ds
