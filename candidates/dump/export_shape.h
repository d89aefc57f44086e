// The shapes `driftscope export` writes a stage's tensor in: a mapping's `shape:` of a stage and
// its `shapes:` default (docs/dumps.md), so that an engine's own tests load the files in the
// shape the engine itself writes ([T, heads, head_dim], [W] for one token, [1, T, W]).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dump_mapping.h"
#include "model_config.h"
#include "tensor.h"

namespace ds::dump {

// The names a `shape:` axis may use, besides positive integers: T (the token rows written) and
// the model's dimensions.
const std::vector<std::string_view>& shape_symbols();
// Checks one axis ("T", "heads", "T*v_heads", "1"); the reason it is not one, or nullopt.
std::optional<std::string> shape_axis_error(std::string_view axis);
// A state stage (conv_state, gdn_state): one value per step, no token axis.
bool is_state_stage(std::string_view stage);

// The catalog tensor `value` of `stage` ([T, W] token rows, or a state stage's 2-D shape) in the
// shape and axis order the engine writes: reshaped to `src.shape` (or the `shapes` default), the
// mapping's `transpose` undone, and under Shapes::ggml without leading 1-dims. Throws DumpError
// naming `where` (the mapping and the stage) when the shape does not hold the tensor or a
// transpose has another number of axes than the shape.
Tensor to_engine_shape(const Tensor& value, const Source& src, Shapes shapes, const ModelConfig& cfg,
                       std::string_view stage, const std::string& where);

}  // namespace ds::dump
