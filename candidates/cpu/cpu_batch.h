// How cpu-f16 serves a batch (candidate.h, "Batches"): its row-wise ops (norms, GEMMs,
// activations, residuals) run once over every sequence's stacked rows; only what depends on a
// sequence's positions or its own KV cache (embed's learned positions, RoPE, attention) runs per
// sequence, on that sequence's rows.
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

}  // namespace ds::cpu
