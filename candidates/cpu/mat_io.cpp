#include "mat_io.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ds::cpu {

Mat to_mat(const Tensor& t) {
  Mat m(t.rank() == 1 ? 1 : t.dim(0), t.rank() == 1 ? t.dim(0) : t.numel() / t.dim(0));
  for (std::int64_t i = 0; i < t.numel(); ++i) m.v[std::size_t(i)] = float(t.at(i));
  return m;
}

Tensor to_f16(const Mat& m) { return to_tensor(m, DType::f16); }

Tensor to_tensor(const Mat& m, DType storage) {
  Tensor t(storage, {m.rows, m.cols});
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, double(m.v[std::size_t(i)]));
  return t;
}

const Tensor& input(const TensorMap& inputs, std::string_view name, std::string_view who) {
  auto it = inputs.find(name);
  if (it == inputs.end()) throw std::logic_error(fmt::format("{}: input '{}' not provided", who, name));
  return it->second;
}

}  // namespace ds::cpu
