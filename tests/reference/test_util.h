// Small helpers shared by the reference tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model.h"
#include "tensor.h"

namespace ds::ref::test {

Tensor mat(std::int64_t rows, std::int64_t cols, std::initializer_list<double> v);
Tensor vec(std::initializer_list<double> v);
// Deterministic N(0, std) values, f64.
Tensor random(Shape shape, std::uint64_t seed, double std = 1.0);
double max_abs_diff(const Tensor& a, const Tensor& b);
std::vector<std::int32_t> token_ids(int n, int vocab, std::uint64_t seed);

using Stages = std::map<std::tuple<int, int, std::string>, Tensor>;  // (step, layer, stage)
// Every stage of a 5-token prefill and two decode steps through the oracle (layer -1: the head's).
Stages all_stages(const Model& m);
// Every stage of `got` within `tolerance` (max abs diff) of `want`'s, with the same stages and shapes.
void expect_same_stages(const Model& got, const Model& want, double tolerance);
// The same dtype, shape and bytes.
bool same_bits(const Tensor& a, const Tensor& b);
// An empty directory of this process's under the system temp dir: driftscope-ref-PID-NAME.
std::filesystem::path temp_dir(const std::string& name);

}  // namespace ds::ref::test
