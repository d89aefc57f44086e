// A loaded model: its configuration and weights.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "model_config.h"
#include "weights.h"

namespace ds {

struct Model {
  ModelConfig config;
  WeightStore weights;
  // The ggml type name ("Q4_K", "F16") each weight had in its GGUF file, before dequantization:
  // the matmuls of an engine that reads the file quantize their activations by it. Empty for
  // other sources.
  std::map<std::string, std::string, std::less<>> file_types;

  std::string_view file_type(std::string_view weight) const {
    const auto it = file_types.find(weight);
    return it == file_types.end() ? std::string_view{} : std::string_view(it->second);
  }
};

}  // namespace ds
