// The LLaMA GGUF Q/K row permutation of weights (gguf_qk_to_hf in weights.h).
#pragma once

#include <string_view>

#include "weights.h"

namespace ds::ref {

// In place on the named tensor ([heads * d, ...] rows); absent tensors are left alone.
void unpermute_qk(WeightStore& w, std::string_view name, int heads);
void permute_qk(WeightStore& w, std::string_view name, int heads);

}  // namespace ds::ref
