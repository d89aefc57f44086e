// Device buffers that live for one step of a gpu candidate (simt, cuda, mutants): allocated
// through a dsk::KernelTable, released when the step ends, read back as stage tensors.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "candidate.h"
#include "kernels.h"

namespace ds::gpu {

class DevBuf {
 public:
  DevBuf(const dsk::KernelTable& k, std::size_t bytes) : k_(&k), p_(k.alloc(bytes)), bytes_(bytes) {}
  DevBuf(const dsk::KernelTable& k, const Tensor& t) : DevBuf(k, t.nbytes()) {
    k.to_device(p_, t.raw(), t.nbytes());
  }
  template <class T>
  DevBuf(const dsk::KernelTable& k, const std::vector<T>& v) : DevBuf(k, v.size() * sizeof(T)) {
    k.to_device(p_, v.data(), bytes_);
  }
  DevBuf(DevBuf&& o) noexcept : k_(o.k_), p_(std::exchange(o.p_, nullptr)), bytes_(o.bytes_) {}
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf& operator=(DevBuf&&) = delete;
  ~DevBuf() {
    if (p_ != nullptr) k_->release(p_);
  }
  void* get() const { return p_; }
  float* f32() const { return static_cast<float*>(p_); }
  std::int32_t* i32() const { return static_cast<std::int32_t*>(p_); }
  // The buffer read back as an f16 [rows, cols] stage tensor.
  Tensor f16(std::int64_t rows, std::int64_t cols) const {
    Tensor t(DType::f16, {rows, cols});
    k_->to_host(t.raw(), p_, t.nbytes());
    return t;
  }
  // n f32 values from element `from` on (all of them when n is 0).
  std::vector<float> floats(std::size_t from = 0, std::size_t n = 0) const {
    std::vector<float> v(n == 0 ? bytes_ / sizeof(float) - from : n);
    k_->to_host(v.data(), f32() + from, v.size() * sizeof(float));
    return v;
  }
  void put(const std::vector<float>& v, std::size_t at) const {
    k_->to_device(f32() + at, v.data(), v.size() * sizeof(float));
  }

 private:
  const dsk::KernelTable* k_;
  void* p_;
  std::size_t bytes_;
};

// The input `name` of a step (f16 activations, or i32 tokens); a missing one is a plan bug.
inline const Tensor& step_input(const TensorMap& inputs, std::string_view name) {
  auto it = inputs.find(name);
  if (it == inputs.end()) throw std::logic_error(fmt::format("gpu candidate: input '{}' not provided", name));
  if (it->second.dtype() != DType::f16 && it->second.dtype() != DType::i32)
    throw std::logic_error(
        fmt::format("gpu candidate: input '{}' is {}, expected f16", name, dtype_name(it->second.dtype())));
  return it->second;
}

// Column blocks of an f16 [rows, cols] stage tensor, gathered into a new one: n_blocks blocks
// of `width` columns, block b starting at column first + b * stride. Splits a packed output
// ([gate | up], [qkv_mixed | z], q_proj's [q | gate] per head) into its stages.
inline Tensor f16_blocks(const Tensor& t, std::int64_t first, std::int64_t width, std::int64_t stride,
                         std::int64_t n_blocks) {
  const std::int64_t rows = t.dim(0), cols = t.dim(1);
  Tensor out(DType::f16, {rows, width * n_blocks});
  const std::size_t w = std::size_t(width) * 2;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < n_blocks; ++b)
      std::memcpy(out.raw() + (std::size_t(r) * std::size_t(n_blocks) + std::size_t(b)) * w,
                  t.raw() + (std::size_t(r) * std::size_t(cols) + std::size_t(first + b * stride)) * 2, w);
  return out;
}
inline Tensor f16_columns(const Tensor& t, std::int64_t first, std::int64_t n) {
  return f16_blocks(t, first, n, 0, 1);
}

}  // namespace ds::gpu
