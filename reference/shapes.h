// The shape every known weight must have under a config: a file whose tensor disagrees with
// its own metadata is refused at load, naming the tensor, instead of failing mid-compute.
#pragma once

#include <optional>
#include <string_view>

#include "model.h"

namespace ds::ref {

// Expected PyTorch-order shape of canonical tensor `name`; nullopt for names it does not know.
std::optional<Shape> expected_shape(const ModelConfig& cfg, std::string_view name);
// Throws ModelError naming the first tensor whose shape differs from expected_shape.
void check_shapes(const Model& model);

}  // namespace ds::ref
