// The safetensors container (reference-math.md §5.5): u64 header length, JSON header,
// row-major little-endian data. F32 / F16 / BF16 decode to exact f32, F64 to f64.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ds::ref {

// Calls `sink(name, tensor)` for every tensor whose name `want` accepts, in header order.
void read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& want,
                      const std::function<void(const std::string&, Tensor)>& sink);
// Writes each tensor in its own dtype (F64, F32, F16, BF16; i32 is refused).
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace ds::ref
