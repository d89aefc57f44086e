// The f32 GDN kernels' side of a stage: f16 stage inputs widened to f32 and f32 results stored as
// f16 stages, for the Qwen3-Next steps of the gpu candidates (gpu_hybrid.cpp, gpu_gdn_batch.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor.h"

namespace ds::gpu {

// An f16 stage input widened to f32 (exactly).
inline std::vector<float> widen(const Tensor& t) {
  const Tensor f = t.to(DType::f32);
  const float* p = f.data<float>();
  return {p, p + f.numel()};
}

// An f32 result of `rows` x `cols` as the f16 stage the candidate stores.
inline Tensor f32_stage(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  Tensor t(DType::f32, {rows, cols});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t.to(DType::f16);
}

}  // namespace ds::gpu
