#include "judge_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "bias.h"
#include "local_check.h"
#include "logits.h"
#include "metrics.h"
#include "run_state.h"
#include "stage_catalog.h"

namespace ds {

namespace {

std::vector<double> head_values(const Tensor& t, std::int64_t from, int n) {
  std::vector<double> v;
  for (std::int64_t i = from; i < t.numel() && i < from + n; ++i) v.push_back(t.at(i));
  return v;
}

}  // namespace

void judge_stage(RunState& s, const LaunchFindings& findings, const StageCall& c, const Tensor& ref) {
  const Tensor* cand = c.cand;
  const Tensor* floor = c.floor;
  StageResult r;
  r.key = {c.step, c.layer, std::string(c.stage), c.seq};
  r.mode = c.mode;
  r.cand_dtype = c.storage;
  r.shape = ref.shape();
  if (!cand) {
    r.status = Status::missing;
    r.note = "the candidate produced no tensor for this stage";
  } else if (cand->numel() != ref.numel()) {
    r.status = Status::shape_mismatch;
    r.note =
        fmt::format("candidate shape {} vs reference {}", shape_str(cand->shape()), shape_str(ref.shape()));
  } else {
    const Tensor t = cand->reshaped(ref.shape());
    r.cand_hash = content_hash(t);
    r.m.ref_rms = rms(ref.view());
    if (floor && floor->numel() == ref.numel()) {
      const Metrics fm = compute_metrics(ref.view(), floor->view(), c.storage, {});
      r.floor_max_abs = fm.max_abs;
      r.floor_rms = fm.rms;
      r.floor_mean_abs = fm.mean_abs;
    }
    if (c.honest && c.honest_alt && c.honest->numel() == ref.numel() && c.honest_alt->numel() == ref.numel())
      r.local = measure_local(ref, t, *c.honest, *c.honest_alt, c.storage, s.numerics, c.stage,
                              s.header ? stage_head_width(*s.header, c.layer, c.stage) : 0);
    r.m = compute_metrics(ref.view(), t.view(), c.storage, s.policy.tolerance(r));
    if (floor && floor->numel() == ref.numel()) {
      const TensorView fv = floor->view();
      const BiasFit bias = fit_bias(ref.view(), t.view(), &fv);
      r.bias_slope = bias.slope;
      r.bias_se = bias.se;
    }
    if (ref.rank() == 2 && ref.dim(0) > 1) r.per_token_rel = per_row_relative_error(ref.view(), t.view());
  }
  s.policy.judge(r);
  if (auto found = findings.find(r.key.stage); found != findings.end()) {
    if (found->second.note_only) {
      r.note += (r.note.empty() ? "" : "; ") + found->second.note;
    } else {
      r.status = found->second.status;
      r.note = found->second.note;
    }
  }
  if (c.batch_finding) {
    r.status = c.batch_finding->status;
    r.note = c.batch_finding->note;
  }
  if (is_failure(r) && cand && cand->numel() == ref.numel()) {
    // Around the element the row is shown by (the first mismatch, else the largest difference),
    // where the reader looks, not at elements 0..4.
    const std::int64_t at = evidence_index(r.m);
    r.head_from = at < 0 ? 0 : std::max<std::int64_t>(0, std::min(at, ref.numel() - 5) - 2);
    r.head_ref = head_values(ref, r.head_from, 5);
    r.head_cand = head_values(*cand, r.head_from, 5);
  }
  const Tensor cand_shaped = cand && cand->numel() == ref.numel() ? cand->reshaped(ref.shape()) : Tensor{};
  s.record(std::move(r), &ref, cand_shaped.empty() ? nullptr : &cand_shaped);
}

void record_filled(RunState& s, const StageCall& c) {
  StageResult r;
  r.key = {c.step, c.layer, std::string(c.stage), c.seq};
  r.mode = c.mode;
  r.status = Status::filled;
  r.cand_dtype = c.storage;
  r.shape = c.ref.shape();
  r.note = fmt::format("computed by the reference fill ({}), not by the candidate", dtype_name(c.storage));
  const Tensor& value = *c.cand;
  const Tensor v = value.numel() == c.ref.numel() ? value.reshaped(c.ref.shape()) : Tensor{};
  s.record(std::move(r), &c.ref, v.empty() ? nullptr : &v);
}

void note_logits(RunReport& report, Mode mode, int step, const Tensor& ref, const Tensor& cand) {
  if (cand.numel() != ref.numel()) return;
  const Tensor c = cand.reshaped(ref.shape());
  const LogitsMetrics m = compare_logits(ref, c);
  auto it =
      std::find_if(report.logits.begin(), report.logits.end(), [&](const auto& l) { return l.mode == mode; });
  if (it == report.logits.end()) it = report.logits.insert(report.logits.end(), LaneLogits{mode});
  it->max_kl = std::max(it->max_kl, m.max_kl);
  it->min_top1 = std::min(it->min_top1, m.top1_agreement);
  it->disagreements += m.disagreements;
  it->max_disagree_margin = std::max(it->max_disagree_margin, m.max_disagree_margin);
  const std::int64_t last = ref.dim(0) - 1;
  if (it->first_token_divergence < 0 && argmax_row(ref, last) != argmax_row(c, last))
    it->first_token_divergence = step;
}

void OracleYardstick::judge(RunState& s, const LaunchFindings& findings, const StageCall& c) {
  judge_stage(s, findings, c, c.ref);
}

const Tensor* OracleYardstick::logits(const TensorMap& ref_head) const { return &ref_head.at("logits"); }

}  // namespace ds
