#include "cpu_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

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

}  // namespace ds::cpu
