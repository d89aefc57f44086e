#include "weights.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ds {

std::string layer_weight(int layer, std::string_view role) { return fmt::format("blk.{}.{}", layer, role); }

QuantMatrix QuantMatrix::matrix(std::int64_t i) const {
  if (shape.size() != 3 || i < 0 || i >= shape[0])
    throw std::out_of_range(fmt::format("matrix {} of a quantized {} tensor", i, shape_str(shape)));
  QuantMatrix m = *this;
  m.shape = {shape[1], shape[2]};
  m.data = data + std::size_t(i * shape[1]) * row_bytes;
  return m;
}

Tensor QuantMatrix::dequantized() const {
  Tensor t(DType::f32, shape);
  for (std::int64_t r = 0, n = rows(); r < n; ++r) row(r, t.data<float>() + r * cols());
  return t;
}

void WeightStore::put(std::string name, Tensor t) {
  if (auto q = quantized_.find(name); q != quantized_.end()) {
    quantized_.erase(q);
    std::lock_guard lock(decoded_mutex_);
    if (auto d = decoded_.find(name); d != decoded_.end()) decoded_.erase(d);
  }
  tensors_.insert_or_assign(std::move(name), std::move(t));
}

void WeightStore::put_quantized(std::string name, QuantMatrix q) {
  if (q.decode == nullptr || q.data == nullptr || !q.owner || q.shape.size() < 2 || q.row_bytes == 0)
    throw std::invalid_argument(
        fmt::format("weight '{}': a quantized {} tensor without its rows", name, shape_str(q.shape)));
  erase(name);
  quantized_.emplace(std::move(name), std::move(q));
}

bool WeightStore::has(std::string_view name) const {
  return tensors_.find(name) != tensors_.end() || quantized_.find(name) != quantized_.end();
}

const Tensor* WeightStore::find(std::string_view name) const {
  if (auto it = tensors_.find(name); it != tensors_.end()) return &it->second;
  const QuantMatrix* q = find_quantized(name);
  if (!q) return nullptr;
  std::lock_guard lock(decoded_mutex_);
  auto d = decoded_.find(name);
  if (d == decoded_.end()) d = decoded_.emplace(std::string(name), q->dequantized()).first;
  return &d->second;
}

const QuantMatrix* WeightStore::find_quantized(std::string_view name) const {
  auto it = quantized_.find(name);
  return it == quantized_.end() ? nullptr : &it->second;
}

std::optional<Shape> WeightStore::shape_of(std::string_view name) const {
  if (auto it = tensors_.find(name); it != tensors_.end()) return it->second.shape();
  if (const QuantMatrix* q = find_quantized(name)) return q->shape;
  return std::nullopt;
}

Tensor* WeightStore::find_mutable(std::string_view name) {
  if (auto it = tensors_.find(name); it != tensors_.end()) return &it->second;
  const QuantMatrix* q = find_quantized(name);
  if (!q) return nullptr;
  Tensor t = q->dequantized();
  const std::string key(name);
  put(key, std::move(t));
  return &tensors_.find(key)->second;
}

const Tensor& WeightStore::get(std::string_view name) const {
  if (const Tensor* t = find(name)) return *t;
  throw std::out_of_range(fmt::format("weight tensor '{}' is missing", name));
}

void WeightStore::erase(std::string_view name) {
  if (auto it = tensors_.find(name); it != tensors_.end()) tensors_.erase(it);
  if (auto it = quantized_.find(name); it != quantized_.end()) quantized_.erase(it);
  std::lock_guard lock(decoded_mutex_);
  if (auto it = decoded_.find(name); it != decoded_.end()) decoded_.erase(it);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(size());
  auto t = tensors_.begin();
  auto q = quantized_.begin();
  while (t != tensors_.end() || q != quantized_.end()) {
    if (q == quantized_.end() || (t != tensors_.end() && t->first < q->first))
      out.push_back((t++)->first);
    else
      out.push_back((q++)->first);
  }
  return out;
}

std::uint64_t WeightStore::stored_bytes() const {
  std::uint64_t n = 0;
  for (const auto& [name, t] : tensors_) n += t.nbytes();
  for (const auto& [name, q] : quantized_) n += q.nbytes();
  return n;
}

std::size_t WeightStore::dequantized_count() const {
  std::lock_guard lock(decoded_mutex_);
  return decoded_.size();
}

}  // namespace ds
