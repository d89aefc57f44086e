// The LLaMA GGUF Q/K row permutation (llama.cpp convert `permute`, reference-math.md §2):
// GGUF row h*d + 2i is HF row h*d + i, GGUF row h*d + 2i + 1 is HF row h*d + i + d/2.
#pragma once

#include <string_view>

#include "weights.h"

namespace ds::ref {

// In place on the named tensor ([heads * d, ...] rows); absent tensors are left alone.
void unpermute_qk(WeightStore& w, std::string_view name, int heads);
void permute_qk(WeightStore& w, std::string_view name, int heads);

}  // namespace ds::ref
