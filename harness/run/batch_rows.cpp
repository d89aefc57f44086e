#include "batch_rows.h"

#include <fmt/format.h>

namespace ds {

Tensor stack_rows(const std::vector<Tensor>& parts) {
  Tensor out;
  for (const Tensor& p : parts) out = Tensor::concat_rows(out, p);
  return out;
}

Tensor stack_states(const std::vector<Tensor>& parts) {
  const Tensor* shape_of = nullptr;
  for (const Tensor& p : parts)
    if (!p.empty()) {
      shape_of = &p;
      break;
    }
  if (!shape_of) return Tensor{};
  Tensor out;
  for (const Tensor& p : parts)
    out = Tensor::concat_rows(out, p.empty() ? Tensor(shape_of->dtype(), shape_of->shape()) : p);
  return out;
}

Tensor row_part(const Tensor& out, const SeqSpan& q, int total_rows, const std::string& step,
                const std::string& stage) {
  if (out.rank() == 0 || out.dim(0) != total_rows)
    throw CandidateCrash(step, fmt::format("a batched call of {} rows returned '{}' of shape {}: a row stage "
                                           "must hold every sequence's rows, stacked",
                                           total_rows, stage, shape_str(out.shape())));
  return out.rows(q.row0, q.row0 + q.n_tokens);
}

Tensor state_part(const Tensor& out, std::size_t i, std::size_t n, const std::string& step,
                  const std::string& stage) {
  if (out.rank() == 0 || out.dim(0) % std::int64_t(n) != 0)
    throw CandidateCrash(step,
                         fmt::format("a batched call of {} sequences returned the state '{}' of shape {}: "
                                     "it must hold one equal part per sequence, stacked",
                                     n, stage, shape_str(out.shape())));
  const std::int64_t each = out.dim(0) / std::int64_t(n);
  return out.rows(std::int64_t(i) * each, std::int64_t(i + 1) * each);
}

}  // namespace ds
