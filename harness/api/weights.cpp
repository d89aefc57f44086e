#include "weights.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ds {

std::string layer_weight(int layer, std::string_view role) { return fmt::format("blk.{}.{}", layer, role); }

void WeightStore::put(std::string name, Tensor t) {
  tensors_.insert_or_assign(std::move(name), std::move(t));
}

bool WeightStore::has(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

const Tensor* WeightStore::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const Tensor& WeightStore::get(std::string_view name) const {
  if (const Tensor* t = find(name)) return *t;
  throw std::out_of_range(fmt::format("weight tensor '{}' is missing", name));
}

void WeightStore::erase(std::string_view name) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) tensors_.erase(it);
}

}  // namespace ds
