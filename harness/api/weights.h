// WeightStore: a model's tensors by canonical (GGUF-style) name, e.g. "blk.0.attn_q.weight".
// Loaders (synthetic, GGUF, safetensors) translate their own names into these.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Decodes n elements (whole blocks) of one block-quantized row into f32.
using QuantDecode = void (*)(const std::byte* src, float* dst, std::int64_t n);

// A matrix (or a stack of them: MoE experts) kept in its file's block-quantized encoding, a GGUF's
// Q8_0 or Q4_K: 4.5 to 8.5 bits a weight where an f32 copy takes 32. Rows are independent runs
// of whole blocks, so a reader decodes one row at a time into its own scratch; `decode` is the
// loader's dequantizer, bit for bit what the whole tensor decoded up front would hold. The rows
// are where `owner` keeps them: the GGUF's read-only mapping (no copy, and a forked child reads the
// same pages), or a buffer of their own once the loader has moved rows (llama's Q/K order).
struct QuantMatrix {
  std::string type;  // the ggml type name ("Q4_K"), as Model::file_types has it
  Shape shape;       // [rows, cols] or [experts, rows, cols]; cols whole blocks
  std::size_t row_bytes = 0;
  QuantDecode decode = nullptr;
  std::shared_ptr<const void> owner;  // keeps `data` alive; shared by the slices of one tensor
  const std::byte* data = nullptr;    // row 0

  std::int64_t cols() const { return shape.back(); }
  std::int64_t rows() const { return cols() == 0 ? 0 : ds::numel(shape) / cols(); }
  std::size_t nbytes() const { return std::size_t(rows()) * row_bytes; }
  const std::byte* row_data(std::int64_t r) const { return data + std::size_t(r) * row_bytes; }
  // Row r decoded into `out` (cols() floats).
  void row(std::int64_t r, float* out) const { decode(row_data(r), out, cols()); }
  // Matrix `i` of a stack [n, rows, cols] as [rows, cols], sharing the bytes.
  QuantMatrix matrix(std::int64_t i) const;
  // The whole tensor decoded to f32, in `shape`.
  Tensor dequantized() const;
};

class WeightStore {
 public:
  WeightStore() = default;
  WeightStore(const WeightStore& o) : tensors_(o.tensors_), quantized_(o.quantized_) {}
  WeightStore(WeightStore&& o) noexcept
      : tensors_(std::move(o.tensors_)), quantized_(std::move(o.quantized_)) {}
  WeightStore& operator=(WeightStore o) noexcept {
    tensors_ = std::move(o.tensors_);
    quantized_ = std::move(o.quantized_);
    std::lock_guard lock(decoded_mutex_);
    decoded_.clear();
    return *this;
  }

  // Replaces any tensor of that name, quantized or not.
  void put(std::string name, Tensor t);
  void put_quantized(std::string name, QuantMatrix q);
  bool has(std::string_view name) const;
  // Throws std::out_of_range naming the tensor when absent.
  const Tensor& get(std::string_view name) const;
  // A quantized weight is decoded to f32 on first use and kept (dequantized_count() counts them):
  // a reader that knows QuantMatrix asks find_quantized first and holds no such copy.
  const Tensor* find(std::string_view name) const;
  const QuantMatrix* find_quantized(std::string_view name) const;
  // The shape of a weight, quantized or not, without decoding it; nullopt when absent.
  std::optional<Shape> shape_of(std::string_view name) const;
  // For the few who rewrite a loaded model before anything reads it (run --probe): a quantized
  // weight becomes its f32 tensor.
  Tensor* find_mutable(std::string_view name);
  const Tensor& layer(int layer, std::string_view role) const { return get(layer_weight(layer, role)); }
  const Tensor* find_layer(int layer, std::string_view role) const { return find(layer_weight(layer, role)); }
  void erase(std::string_view name);
  // The tensors held as Tensor; the quantized ones are in quantized().
  const std::map<std::string, Tensor, std::less<>>& all() const { return tensors_; }
  const std::map<std::string, QuantMatrix, std::less<>>& quantized() const { return quantized_; }
  // Every weight's name, quantized or not, in order.
  std::vector<std::string> names() const;
  std::size_t size() const { return tensors_.size() + quantized_.size(); }
  // Bytes held: tensors at their dtype, quantized weights in their encoding (no decoded copies).
  std::uint64_t stored_bytes() const;
  // Quantized weights some reader has decoded whole so far.
  std::size_t dequantized_count() const;

 private:
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::map<std::string, QuantMatrix, std::less<>> quantized_;
  mutable std::mutex decoded_mutex_;
  mutable std::map<std::string, Tensor, std::less<>> decoded_;
};

}  // namespace ds
