// WeightStore: a model's tensors by canonical (GGUF-style) name, e.g. "blk.0.attn_q.weight".
// Loaders (synthetic, GGUF, safetensors) translate their own names into these.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "tensor.h"

namespace ds {

// Canonical per-layer tensor name: layer_weight(3, "attn_q.weight") == "blk.3.attn_q.weight".
std::string layer_weight(int layer, std::string_view role);

// The LLaMA GGUF Q/K permutation (llama.cpp's converter, reference-math.md §2): within each head
// of `head_dim`, GGUF index h*d + 2i is HF index h*d + i and h*d + 2i + 1 is HF h*d + i + d/2.
// Weights are permuted along their rows, activations along their columns; both use this map.
inline std::int64_t gguf_qk_to_hf(std::int64_t gguf, std::int64_t head_dim) {
  const std::int64_t head = gguf / head_dim, r = gguf % head_dim;
  return head * head_dim + r / 2 + (r % 2) * (head_dim / 2);
}

class WeightStore {
 public:
  void put(std::string name, Tensor t);
  bool has(std::string_view name) const;
  // Throws std::out_of_range naming the tensor when absent.
  const Tensor& get(std::string_view name) const;
  const Tensor* find(std::string_view name) const;
  // For the few who rewrite a loaded model before anything reads it (run --probe).
  Tensor* find_mutable(std::string_view name) { return const_cast<Tensor*>(find(name)); }
  const Tensor& layer(int layer, std::string_view role) const { return get(layer_weight(layer, role)); }
  const Tensor* find_layer(int layer, std::string_view role) const { return find(layer_weight(layer, role)); }
  void erase(std::string_view name);
  const std::map<std::string, Tensor, std::less<>>& all() const { return tensors_; }
  std::size_t size() const { return tensors_.size(); }

 private:
  std::map<std::string, Tensor, std::less<>> tensors_;
};

}  // namespace ds
