#include "cpu_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "mat_io.h"

namespace ds::cpu {

std::vector<SeqSpan> seq_spans(const StepContext& ctx) {
  if (!ctx.seqs.empty()) return ctx.seqs;
  SeqSpan one;
  one.n_tokens = ctx.n_tokens;
  one.pos0 = ctx.pos0;
  return {one};
}

Mat row_range(const Mat& m, std::int64_t first, std::int64_t n) {
  if (first < 0 || n < 0 || first + n > m.rows)
    throw std::out_of_range(
        fmt::format("cpu candidate: rows [{}, {}) of a {}-row input", first, first + n, m.rows));
  Mat out(n, m.cols);
  std::copy_n(m.row(first), n * m.cols, out.v.begin());
  return out;
}

Mat map_seqs(const StepContext& ctx, const Mat& x,
             const std::function<Mat(const SeqSpan&, const Mat&)>& per_seq) {
  const std::vector<SeqSpan> spans = seq_spans(ctx);
  if (spans.size() == 1 && ctx.seqs.empty()) return per_seq(spans.front(), x);
  Mat out;
  for (const SeqSpan& q : spans) {
    const Mat part = per_seq(q, row_range(x, q.row0, q.n_tokens));
    if (out.cols == 0) out = Mat(0, part.cols);
    out.v.insert(out.v.end(), part.v.begin(), part.v.end());
    out.rows += part.rows;
  }
  return out;
}

Mat state_part(const Tensor& stacked, const StepContext& ctx, std::size_t i) {
  if (stacked.empty()) return {};
  if (ctx.seqs.empty()) return to_mat(stacked);
  if (ctx.seqs.at(i).fresh) return {};
  const std::int64_t rows = stacked.dim(0) / std::int64_t(ctx.seqs.size());
  return to_mat(stacked.rows(std::int64_t(i) * rows, std::int64_t(i + 1) * rows));
}

Mat stack_mats(const std::vector<Mat>& parts) {
  Mat out(0, parts.empty() ? 0 : parts.front().cols);
  for (const Mat& p : parts) {
    out.v.insert(out.v.end(), p.v.begin(), p.v.end());
    out.rows += p.rows;
  }
  return out;
}

}  // namespace ds::cpu
