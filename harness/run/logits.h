// End-of-model metrics: how different are the candidate's next-token distributions, and from
// which decode step on does it pick a different greedy token?
#pragma once

#include <vector>

#include "tensor.h"

namespace ds {

struct LogitsMetrics {
  double max_kl = 0;  // max over rows of KL(softmax(ref) || softmax(cand)), nats
  double mean_kl = 0;
  double top1_agreement = 1;  // fraction of rows whose argmax agrees
  int rows = 0;
  int disagreements = 0;  // rows whose argmax differs
  // Among those, the largest ref[ref's argmax] - ref[cand's argmax]: how close to a tie the
  // reference was where the candidate picked another token.
  double max_disagree_margin = 0;
};

// ref and cand: [T, vocab].
LogitsMetrics compare_logits(const Tensor& ref, const Tensor& cand);
int argmax_row(const Tensor& logits, std::int64_t row);

}  // namespace ds
