#include "logits.h"

#include <cmath>
#include <stdexcept>

namespace ds {

int argmax_row(const Tensor& logits, std::int64_t row) {
  const std::int64_t V = logits.dim(1);
  int best = 0;
  for (std::int64_t i = 1; i < V; ++i)
    if (logits.at(row * V + i) > logits.at(row * V + best)) best = int(i);
  return best;
}

LogitsMetrics compare_logits(const Tensor& ref, const Tensor& cand) {
  if (ref.rank() != 2 || ref.shape() != cand.shape())
    throw std::invalid_argument("compare_logits: shapes differ");
  const std::int64_t T = ref.dim(0), V = ref.dim(1);
  LogitsMetrics m;
  m.rows = int(T);
  int agree = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    // log-softmax of both rows, stable in double.
    double mr = -INFINITY, mc = -INFINITY;
    for (std::int64_t i = 0; i < V; ++i) {
      mr = std::fmax(mr, ref.at(t * V + i));
      mc = std::fmax(mc, cand.at(t * V + i));
    }
    double zr = 0, zc = 0;
    for (std::int64_t i = 0; i < V; ++i) {
      zr += std::exp(ref.at(t * V + i) - mr);
      zc += std::exp(cand.at(t * V + i) - mc);
    }
    const double lzr = std::log(zr) + mr, lzc = std::log(zc) + mc;
    double kl = 0;
    for (std::int64_t i = 0; i < V; ++i) {
      const double lp = ref.at(t * V + i) - lzr, lq = cand.at(t * V + i) - lzc;
      kl += std::exp(lp) * (lp - lq);
    }
    kl = std::fmax(kl, 0.0);
    m.max_kl = std::fmax(m.max_kl, kl);
    m.mean_kl += kl / double(T);
    const int top_ref = argmax_row(ref, t), top_cand = argmax_row(cand, t);
    if (top_ref == top_cand) {
      ++agree;
    } else {
      ++m.disagreements;
      m.max_disagree_margin =
          std::fmax(m.max_disagree_margin, ref.at(t * V + top_ref) - ref.at(t * V + top_cand));
    }
  }
  m.top1_agreement = T ? double(agree) / double(T) : 1.0;
  return m;
}

}  // namespace ds
