// How cpu-f16 serves a batch (candidate.h, "Batches"): its row-wise ops (norms, GEMMs,
// activations, residuals) run once over every sequence's stacked rows; only what depends on a
// sequence's positions or its own KV cache (embed's learned positions, RoPE, attention) runs per
// sequence, on that sequence's rows. The Gated DeltaNet conv and recurrence run per sequence
// too, each on its own rows and its own part of the stacked states.
#pragma once

#include <functional>
#include <vector>

#include "candidate.h"
#include "cpu_ops.h"

namespace ds::cpu {

// The sequences of a call: a batched call's, else the call's one sequence.
std::vector<SeqSpan> seq_spans(const StepContext& ctx);

// Rows [first, first + n) of `m`, copied.
Mat row_range(const Mat& m, std::int64_t first, std::int64_t n);

// `per_seq(span, rows)` for every sequence's rows of `x`, its results stacked in sequence order.
Mat map_seqs(const StepContext& ctx, const Mat& x,
             const std::function<Mat(const SeqSpan&, const Mat&)>& per_seq);

// Sequence i's part of a stacked prev: input (n equal parts along dim 0, candidate.h); empty
// when it has no state yet (fresh) or the call's input is empty.
Mat state_part(const Tensor& stacked, const StepContext& ctx, std::size_t i);

// `parts` one under the other (every part has the same columns).
Mat stack_mats(const std::vector<Mat>& parts);

}  // namespace ds::cpu
