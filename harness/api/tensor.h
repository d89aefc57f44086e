// Tensor: an owning, contiguous, row-major buffer; TensorView: a strided, non-owning window.
//
// Stage tensors are small enough that the harness reads elements as double through `at`;
// kernels that need speed take `data<T>()` and work on raw memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dtype.h"

namespace ds {

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s);
Shape row_major_strides(const Shape& s);
std::string shape_str(const Shape& s);
// Coordinates of flat row-major index `flat` in shape `s`.
Shape unravel(std::int64_t flat, const Shape& s);

class TensorView {
 public:
  TensorView() = default;
  TensorView(const std::byte* data, DType dtype, Shape shape, Shape strides);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t numel() const { return ds::numel(shape_); }
  std::int64_t dim(int i) const { return shape_.at(std::size_t(i)); }
  int rank() const { return int(shape_.size()); }
  bool contiguous() const;
  const std::byte* raw() const { return data_; }

  // Element at row-major flat index `flat` of the view, as double.
  double at(std::int64_t flat) const;
  // Rows [begin, end) of the leading dimension.
  TensorView slice_rows(std::int64_t begin, std::int64_t end) const;
  // Element offset (in elements, from raw()) of row-major flat index `flat` of the view.
  std::int64_t offset_of(std::int64_t flat) const;

 private:
  const std::byte* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_, strides_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // A contiguous copy of `v`: bit for bit when the dtype is the same, else converted.
  static Tensor from_view(const TensorView& v, DType dtype);
  static Tensor from_f64(Shape shape, std::span<const double> values, DType dtype = DType::f64);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return ds::numel(shape_); }
  std::int64_t dim(int i) const { return shape_.at(std::size_t(i)); }
  int rank() const { return int(shape_.size()); }
  bool empty() const { return shape_.empty(); }
  std::size_t nbytes() const { return bytes_.size(); }

  double at(std::int64_t flat) const;
  // Stores `v` rounded to this tensor's dtype.
  void set(std::int64_t flat, double v);

  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }

  TensorView view() const;
  Tensor to(DType dtype) const;
  std::vector<double> to_f64() const;
  // Same bytes, new shape (the element count must match).
  Tensor reshaped(Shape shape) const;
  // Rows [begin, end) of the leading dimension, copied.
  Tensor rows(std::int64_t begin, std::int64_t end) const;
  // Concatenation along the leading dimension; the other dimensions must agree.
  static Tensor concat_rows(const Tensor& a, const Tensor& b);

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace ds
