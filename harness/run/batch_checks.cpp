#include "batch_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "batch_rows.h"
#include "launch_log.h"
#include "policy.h"
#include "runner.h"

namespace ds {

namespace {

// The first element at which `a` and `b` differ bit for bit; -1 when they are identical. Tensors
// of different shape or dtype differ at 0.
std::int64_t first_difference(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return 0;
  const std::size_t size = dtype_size(a.dtype());
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(a.raw() + std::size_t(i) * size, b.raw() + std::size_t(i) * size, size) != 0) return i;
  return -1;
}

// The element where `a` and `b` differ by the most, and by how much: {-1, 0} when they are equal
// (NaN counts as the largest difference). Only for tensors of one shape and dtype.
std::pair<std::int64_t, double> largest_difference(const Tensor& a, const Tensor& b) {
  std::pair<std::int64_t, double> worst{-1, 0.0};
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(a.at(i) - b.at(i));
    if (std::isnan(d)) return {i, d};
    if (d > worst.second) worst = {i, d};
  }
  return worst;
}

bool is_state(const BatchCall& c, const std::string& stage) { return c.states.count(stage) > 0; }

// Sequence i's part of the output `stage` of a batched call.
Tensor part_of(const BatchCall& c, const Tensor& out, const std::string& stage, std::size_t i) {
  return is_state(c, stage) ? state_part(out, i, c.ctx.seqs.size(), c.step.name, stage)
                            : row_part(out, c.ctx.seqs[i], c.ctx.n_tokens, c.step.name, stage);
}

// The inputs with sequence k's part changed: its rows of row inputs and of the KV cache, its state,
// its token ids. Values become 0.5 - v, which moves every element (0.5 - v == v only at 0.25, and
// a row is never all 0.25); token ids move by one.
TensorMap perturbed(const BatchCall& c, std::size_t k) {
  TensorMap p = c.inputs;
  const SeqSpan& q = c.ctx.seqs[k];
  for (auto& [name, t] : p) {
    if (t.empty() || t.rank() == 0 || t.dim(0) == 0) continue;
    std::int64_t first = q.row0, rows = q.n_tokens;
    if (name.rfind("cache:", 0) == 0) {
      first = q.cache_row0;
      rows = q.pos0 + q.n_tokens;
    } else if (name.rfind("prev:", 0) == 0) {
      rows = t.dim(0) / std::int64_t(c.ctx.seqs.size());
      first = std::int64_t(k) * rows;
    }
    const std::int64_t row = t.numel() / t.dim(0);
    const std::int64_t range = c.index_range(name);
    for (std::int64_t e = first * row; e < (first + rows) * row && e < t.numel(); ++e)
      t.set(e, range > 0 ? double((std::int64_t(t.at(e)) + 1) % range) : 0.5 - t.at(e));
  }
  return p;
}

TensorMap run_again(Candidate& cand, const BatchCall& c, const StepContext& ctx, const TensorMap& inputs) {
  TensorMap outs;
  cand.run(c.step, ctx, inputs, outs);
  launch_log::take();  // the check's launches belong to no stage
  for (const std::string& o : c.step.outputs)
    if (!outs.count(o))
      throw CandidateCrash(c.step.name, fmt::format("did not produce its declared output '{}'", o));
  return outs;
}

void invariance(Candidate& cand, const BatchCall& c, BatchFindings& found) {
  for (std::size_t i = 0; i < c.ctx.seqs.size(); ++i) {
    const SeqSpan& q = c.ctx.seqs[i];
    const StepContext alone{c.ctx.config, c.ctx.step, c.ctx.layer, q.pos0, q.n_tokens, {}};
    const TensorMap outs = run_again(cand, c, alone, c.alone[i]);
    for (const std::string& stage : c.step.outputs) {
      const Tensor batched = part_of(c, c.outputs.at(stage), stage, i);
      const Tensor& own = outs.at(stage);
      const std::int64_t at = first_difference(batched, own);
      if (at < 0) continue;
      if (c.order_varies && batched.dtype() == own.dtype() && batched.shape() == own.shape()) {
        const double limit = c.floor_limit(i, stage);
        if (!std::isnan(limit)) {
          const auto [worst, by] = largest_difference(batched, own);
          if (!(by > limit)) continue;  // a different order of the same sums, within the floor
          found.try_emplace(
              {q.seq, stage},
              BatchFinding{Status::batch_variant,
                           fmt::format("batch-variant: sequence {}'s {} in the batch differs from the same "
                                       "sequence run alone by {:.3g} at flat index {} (batched {:.7g}, alone "
                                       "{:.7g}), above {:.3g}, what the batch-dependent reduction order the "
                                       "candidate declares may move it ({:g} x its noise floor)",
                                       q.seq, stage, by, worst, batched.at(worst), own.at(worst), limit,
                                       kDefaultFloorFactor)});
          continue;
        }
      }
      found.try_emplace(
          {q.seq, stage},
          BatchFinding{Status::batch_variant,
                       fmt::format("batch-variant: sequence {}'s {} in the batch differs from the "
                                   "same sequence run alone at flat index {} (batched {:.7g}, "
                                   "alone {:.7g})",
                                   q.seq, stage, at, at < batched.numel() ? batched.at(at) : 0.0,
                                   at < own.numel() ? own.at(at) : 0.0)});
    }
  }
}

void leak(Candidate& cand, const BatchCall& c, BatchFindings& found) {
  const std::size_t n = c.ctx.seqs.size();
  if (n < 2) return;
  for (std::size_t k = 0; k < n; ++k) {
    const TensorMap outs = run_again(cand, c, c.ctx, perturbed(c, k));
    for (const std::string& stage : c.step.outputs)
      for (std::size_t i = 0; i < n; ++i) {
        if (i == k) continue;
        const Tensor before = part_of(c, c.outputs.at(stage), stage, i);
        const Tensor after = part_of(c, outs.at(stage), stage, i);
        const std::int64_t at = first_difference(before, after);
        if (at < 0) continue;
        const int from = c.ctx.seqs[k].seq, to = c.ctx.seqs[i].seq;
        found.insert_or_assign(
            {to, stage},
            BatchFinding{
                Status::leak,
                fmt::format("leak: perturbing sequence {}'s inputs moved sequence {}'s {} at flat index {} "
                            "({:.7g} -> {:.7g})",
                            from, to, stage, at, at < before.numel() ? before.at(at) : 0.0,
                            at < after.numel() ? after.at(at) : 0.0)});
      }
  }
}

}  // namespace

BatchChecks parse_batch_checks(const std::string& spec) {
  if (spec == "all") return {};
  if (spec == "none") return {false, false};
  BatchChecks c{false, false};
  std::string_view rest = spec;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item == "invariance")
      c.invariance = true;
    else if (item == "leak")
      c.leak = true;
    else
      throw InputError(
          fmt::format("--batch-checks {}: '{}' is not a check (all, none, invariance, leak)", spec, item));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return c;
}

void check_batch_call(Candidate& cand, const BatchCall& call, BatchChecks which, BatchFindings& found) {
  if (call.ctx.seqs.empty()) return;
  // A leak is the more specific finding: it names the neighbour; it replaces a variance at the stage.
  if (which.invariance) invariance(cand, call, found);
  if (which.leak) leak(cand, call, found);
}

}  // namespace ds
