// A loaded model: its configuration and weights.
#pragma once

#include "model_config.h"
#include "weights.h"

namespace ds {

struct Model {
  ModelConfig config;
  WeightStore weights;
};

}  // namespace ds
