// Moving activations between the harness's Tensors and the cpu candidates' f32 matrices.
#pragma once

#include <string_view>

#include "candidate.h"
#include "cpu_ops.h"

namespace ds::cpu {

// A 2-D (or 1-D, as one row) tensor as an f32 matrix.
Mat to_mat(const Tensor& t);
// Stage outputs are stored in f16 between launches.
Tensor to_f16(const Mat& m);
Tensor to_tensor(const Mat& m, DType storage);
// The input `name` of a step; a missing one is a bug in the candidate's plan, named with `who`.
const Tensor& input(const TensorMap& inputs, std::string_view name, std::string_view who);

}  // namespace ds::cpu
