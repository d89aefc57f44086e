// How a batched call's tensors are laid out (candidate.h, "Batches"): every sequence's input
// stacked into one, and the candidate's stacked outputs cut back into each sequence's.
#pragma once

#include <string>
#include <vector>

#include "candidate.h"
#include "tensor.h"

namespace ds {

// Sequence parts stacked along dim 0, in order. `states`: recurrent states, all of one shape, a
// missing one (empty) standing for zeros of that shape; empty when every part is.
Tensor stack_rows(const std::vector<Tensor>& parts);
Tensor stack_states(const std::vector<Tensor>& parts);

// Sequence i's part of a batched output: rows [row0, row0 + n_tokens) of a row stage, or the
// i-th of n equal parts of dim 0 of a state. Throws CandidateCrash naming `step` and `stage` when
// the output's dim 0 fits neither.
Tensor row_part(const Tensor& out, const SeqSpan& q, int total_rows, const std::string& step,
                const std::string& stage);
Tensor state_part(const Tensor& out, std::size_t i, std::size_t n, const std::string& step,
                  const std::string& stage);

}  // namespace ds
