#include "verify_findings.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "dtype.h"

namespace ds::cli::verify {

namespace {

using RowKey = std::tuple<int, int, std::string>;  // step, layer, stage

// The rows of one lane that carry both tensors and were judged (not filled by the reference).
std::map<RowKey, const trace::TraceRow*> judged_rows(const trace::TraceReader& t, Mode mode) {
  std::map<RowKey, const trace::TraceRow*> out;
  for (const trace::TraceRow& r : t.rows()) {
    if (r.result.mode != mode || !t.has_tensors(r)) continue;
    if (r.result.status == Status::filled || r.result.status == Status::missing ||
        r.result.status == Status::skipped || r.result.status == Status::crashed)
      continue;
    out[{r.result.key.step, r.result.key.layer, r.result.key.stage}] = &r;
  }
  return out;
}

// Rows in the trace's own order (execution order), so findings come out the same way every time.
std::vector<const trace::TraceRow*> in_order(const trace::TraceReader& t,
                                             const std::map<RowKey, const trace::TraceRow*>& rows) {
  std::vector<const trace::TraceRow*> out;
  for (const trace::TraceRow& r : t.rows()) {
    auto it = rows.find({r.result.key.step, r.result.key.layer, r.result.key.stage});
    if (it != rows.end() && it->second == &r) out.push_back(&r);
  }
  return out;
}

// Two stored values are the same value: NaN equals NaN (what a NaN carries is not an output).
bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// An output with a NaN or an infinity proves nothing by being equal to another: the poison itself
// is NaN, and a kernel that reads it gives NaN on every call.
bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// The first index where the two differ, and how many do; -1 when none (or the sizes differ: -2).
std::pair<std::int64_t, std::int64_t> first_difference(const std::vector<double>& a,
                                                       const std::vector<double>& b) {
  if (a.size() != b.size()) return {-2, 0};
  std::int64_t first = -1, count = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_value(a[i], b[i])) {
      if (first < 0) first = std::int64_t(i);
      ++count;
    }
  return {first, count};
}

std::vector<double> rounded(const std::vector<double>& v, DType t) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_to(t, v[i]);
  return out;
}

// JSON has no NaN or infinity: those are written as text.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return fmt::format("{}", v);
}

// Adds `f` unless its stage already has a finding of that kind, which then counts one more call.
void add(std::vector<Finding>& out, Finding f) {
  for (Finding& g : out)
    if (g.kind == f.kind && g.stage == f.stage) {
      ++g.occurrences;
      return;
    }
  out.push_back(std::move(f));
}

Finding finding_at(const char* kind, const StageResult& r) {
  Finding f;
  f.kind = kind;
  f.stage = r.key.stage;
  f.step = r.key.step;
  f.layer = r.key.layer;
  f.mode = r.mode;
  return f;
}

double rms_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return a.empty() ? 0 : std::sqrt(s / double(a.size()));
}

}  // namespace

std::vector<Finding> poison_findings(const trace::TraceReader& a, const trace::TraceReader& b,
                                     const std::vector<StepLaunch>& launches, Mode mode) {
  std::vector<Finding> out;
  const auto rows_a = judged_rows(a, mode);
  const auto rows_b = judged_rows(b, mode);
  for (const trace::TraceRow* ra : in_order(a, rows_a)) {
    const StageResult& r = ra->result;
    auto it = rows_b.find({r.key.step, r.key.layer, r.key.stage});
    if (it == rows_b.end()) continue;
    if (ra->result.cand_hash == it->second->result.cand_hash && ra->result.cand_hash != 0) continue;
    const std::vector<double> va = a.cand_tensor(*ra).to_f64(), vb = b.cand_tensor(*it->second).to_f64();
    const auto [first, count] = first_difference(va, vb);
    if (first == -1) continue;
    Finding f = finding_at(kUninit, r);
    std::set<std::string> kernels;
    std::vector<std::string> names;
    std::string kernel_step;
    for (const StepLaunch& l : launches)
      if (verify::made_by(l, r.key.step, r.key.layer, r.mode, r.key.stage)) {
        kernel_step = l.kernel_step;
        if (kernels.insert(l.launch.kernel).second) names.push_back(l.launch.kernel);
      }
    f.evidence = {{"element", first},
                  {"shape", r.shape},
                  {"differing_elements", count},
                  {"value_poison_nan", first >= 0 ? number(va[std::size_t(first)]) : nlohmann::json()},
                  {"value_poison_finite", first >= 0 ? number(vb[std::size_t(first)]) : nlohmann::json()},
                  {"kernel_step", kernel_step},
                  {"kernels", names}};
    if (first == -2) f.evidence["note"] = "the two runs' outputs differ in size";
    add(out, std::move(f));
  }
  return out;
}

std::vector<Finding> insensitive_findings(const trace::TraceReader& a, const trace::TraceReader& perturbed,
                                          Mode mode) {
  std::vector<Finding> out;
  const auto rows_a = judged_rows(a, mode);
  const auto rows_p = judged_rows(perturbed, mode);
  for (const trace::TraceRow* ra : in_order(a, rows_a)) {
    const StageResult& r = ra->result;
    auto it = rows_p.find({r.key.step, r.key.layer, r.key.stage});
    if (it == rows_p.end() || r.cand_hash != it->second->result.cand_hash) continue;
    const std::vector<double> ca = a.cand_tensor(*ra).to_f64(),
                              cp = perturbed.cand_tensor(*it->second).to_f64();
    if (first_difference(ca, cp).first != -1 || !all_finite(ca)) continue;
    const std::vector<double> ref_a = rounded(a.ref_tensor(*ra).to_f64(), r.cand_dtype);
    const std::vector<double> ref_p = rounded(perturbed.ref_tensor(*it->second).to_f64(), r.cand_dtype);
    const auto [first, count] = first_difference(ref_a, ref_p);
    if (first < 0) continue;  // the reference did not change either (at this dtype)
    Finding f = finding_at(kInputInsensitive, r);
    f.evidence = {{"reference_elements_changed", count},
                  {"candidate_elements_changed", 0},
                  {"element", first},
                  {"reference_before", number(ref_a[std::size_t(first)])},
                  {"reference_after", number(ref_p[std::size_t(first)])},
                  {"candidate", number(ca[std::size_t(first)])}};
    add(out, std::move(f));
  }
  return out;
}

std::vector<Finding> cached_findings(const trace::TraceReader& a, Mode mode) {
  std::vector<Finding> out;
  const auto rows = judged_rows(a, mode);
  // Per stage and output hash, the calls seen so far with that output.
  std::map<std::pair<std::string, std::uint64_t>, std::vector<const trace::TraceRow*>> seen;
  for (const trace::TraceRow* row : in_order(a, rows)) {
    const StageResult& r = row->result;
    if (r.cand_hash == 0) continue;
    auto& earlier = seen[{r.key.stage, r.cand_hash}];
    for (const trace::TraceRow* e : earlier) {
      const std::vector<double> c_now = a.cand_tensor(*row).to_f64(), c_then = a.cand_tensor(*e).to_f64();
      if (first_difference(c_now, c_then).first != -1 || !all_finite(c_now)) continue;
      const std::vector<double> ref_now = rounded(a.ref_tensor(*row).to_f64(), r.cand_dtype);
      const std::vector<double> ref_then = rounded(a.ref_tensor(*e).to_f64(), r.cand_dtype);
      const auto [first, count] = first_difference(ref_now, ref_then);
      if (first < 0) continue;
      Finding f = finding_at(kCachedOutput, r);
      f.evidence = {{"same_output_as", {{"step", e->result.key.step}, {"layer", e->result.key.layer}}},
                    {"reference_elements_differing", count},
                    {"element", first},
                    {"reference_here", number(ref_now[std::size_t(first)])},
                    {"reference_there", number(ref_then[std::size_t(first)])}};
      add(out, std::move(f));
      break;
    }
    earlier.push_back(row);
  }
  return out;
}

std::vector<Finding> returns_input_findings(const trace::TraceReader& a, Mode mode) {
  std::vector<Finding> out;
  const auto rows = judged_rows(a, mode);
  for (const trace::TraceRow* row : in_order(a, rows)) {
    const StageResult& r = row->result;
    const auto step = a.captured_step(r.key.step, r.key.layer, r.mode, r.key.stage);
    if (!step) continue;
    const std::vector<double> cand = a.cand_tensor(*row).to_f64();
    if (!all_finite(cand)) continue;
    std::vector<double> ref;  // read once a candidate input matches
    for (const auto& [name, input] : step->inputs) {
      if (input.numel() != std::int64_t(cand.size()) || !is_float(input.dtype())) continue;
      const std::vector<double> in = input.to_f64();
      if (first_difference(cand, in).first != -1) continue;
      if (ref.empty()) ref = rounded(a.ref_tensor(*row).to_f64(), r.cand_dtype);
      const auto [first, count] = first_difference(ref, in);
      if (first < 0) continue;  // the stage really is its input at this dtype
      Finding f = finding_at(kReturnsInput, r);
      f.evidence = {{"input", name},
                    {"kernel_step", step->kernel_step},
                    {"reference_elements_differing_from_input", count},
                    {"element", first},
                    {"reference", number(ref[std::size_t(first)])},
                    {"input_value", number(in[std::size_t(first)])}};
      add(out, std::move(f));
      break;
    }
  }
  return out;
}

std::optional<DType> next_lower_dtype(DType declared) {
  switch (declared) {
    case DType::f64: return DType::f32;
    case DType::f32: return DType::f16;
    case DType::f16: return DType::bf16;
    default: return std::nullopt;
  }
}

std::vector<Finding> low_precision_findings(const trace::TraceReader& a, Mode mode) {
  struct Stat {
    const StageResult* first = nullptr;
    std::vector<double> ratios;
    double err_cand = 0, err_declared = 0, round_declared = 0, round_lower = 0;  // of the first call measured
    DType lower = DType::f32;
  };
  std::map<std::string, Stat> by_stage;
  std::vector<std::string> order;
  const auto rows = judged_rows(a, mode);
  for (const trace::TraceRow* row : in_order(a, rows)) {
    const StageResult& r = row->result;
    const auto lower = next_lower_dtype(r.cand_dtype);
    if (!lower) continue;
    const std::vector<double> ref = a.ref_tensor(*row).to_f64(), cand = a.cand_tensor(*row).to_f64();
    if (ref.size() != cand.size() || ref.empty()) continue;
    const double err_c = rms_diff(cand, ref);
    const double round_d = rms_diff(rounded(ref, r.cand_dtype), ref);
    const double err_l = rms_diff(rounded(ref, *lower), ref);
    // Nothing to tell apart: exact values, or a tensor the lower dtype stores as well.
    if (!std::isfinite(err_c) || !(round_d > 0) || !(err_l > 2 * round_d)) continue;
    // An honest kernel's error is its noise floor (the reference run at the declared dtype, which
    // also rounds weights and intermediates), not one rounding of the output: measured from there,
    // in steps of the gap between the two dtypes.
    const double err_d = std::isfinite(r.floor_rms) ? std::max(round_d, r.floor_rms) : round_d;
    // An error far past the lower dtype's rounding is a wrong result, not a cheaper one: out of the
    // band (scored -1), so a plainly wrong stage is `parity`, not `low_precision`.
    const double ratio = err_c > kLowPrecisionBand * err_l ? -1
                         : err_c <= err_d                  ? 0
                                          : std::log(err_c / err_d) / std::log(err_l / round_d);
    Stat& s = by_stage[r.key.stage];
    if (s.first == nullptr) {
      order.push_back(r.key.stage);
      s.first = &r;
      s.err_cand = err_c;
      s.err_declared = err_d;
      s.round_declared = round_d;
      s.round_lower = err_l;
      s.lower = *lower;
    }
    s.ratios.push_back(ratio);
  }
  std::vector<Finding> out;
  for (const std::string& stage : order) {
    Stat& s = by_stage[stage];
    std::vector<double> sorted = s.ratios;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    if (median < kLowPrecisionRatio) continue;
    Finding f = finding_at(kLowPrecision, *s.first);
    f.occurrences =
        int(std::count_if(sorted.begin(), sorted.end(), [](double x) { return x >= kLowPrecisionRatio; }));
    f.evidence = {{"declared", dtype_name(s.first->cand_dtype)},
                  {"lower", dtype_name(s.lower)},
                  {"median_ratio", median},
                  {"calls_measured", sorted.size()},
                  {"rms_error", s.err_cand},
                  {"rms_explained_by_declared", s.err_declared},
                  {"rms_rounding_declared", s.round_declared},
                  {"rms_rounding_lower", s.round_lower}};
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

// Two `uninit` findings of one stage, the battery's memcheck's (a line, in its part's verdict) and
// the poison runs' (the calls and reads): one finding, in the first's place, holding both.
void merge_uninit(std::vector<Finding>& findings) {
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].kind != "uninit") continue;
    for (std::size_t j = i + 1; j < findings.size();) {
      if (findings[j].kind != "uninit" || findings[j].stage != findings[i].stage) {
        ++j;
        continue;
      }
      Finding& memcheck = findings[i].from_check_part ? findings[i] : findings[j];
      Finding& poison = &memcheck == &findings[i] ? findings[j] : findings[i];
      if (!memcheck.from_check_part || poison.from_check_part) {
        ++j;
        continue;
      }
      Finding merged = poison;
      merged.evidence["memcheck"] = memcheck.evidence;
      findings[i] = std::move(merged);
      findings.erase(findings.begin() + std::ptrdiff_t(j));
    }
  }
}

}  // namespace

void fold_explained(std::vector<Finding>& findings) {
  merge_uninit(findings);
  const auto general = [](const Finding& f) {
    return f.kind == "parity" || f.kind == "probe" || f.kind == "tail" || f.kind == "size" ||
           f.kind == "batch";
  };
  const auto explains = [](const Finding& f) {
    static const std::array<std::string_view, 8> kinds = {
        "uninit", "input_insensitive", "cached_output", "returns_input", "low_precision", "memory", "race",
        "hazard"};
    return std::find(kinds.begin(), kinds.end(), f.kind) != kinds.end();
  };
  // The first finding that explains each stage's failure, wherever it stands (verify's own checks
  // run after the battery; the battery's memcheck before its parity parts): it takes the place of
  // the stage's first finding, and every general finding of the stage goes into it.
  std::map<std::string, std::size_t> why_of;  // stage -> index in `findings`
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (explains(findings[i])) why_of.emplace(findings[i].stage, i);
  std::vector<Finding> out;
  std::map<std::size_t, std::size_t> placed_at;  // index in `findings` -> index in `out`
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const auto why = why_of.find(f.stage);
    if (!general(f) || why == why_of.end()) {
      if (!placed_at.contains(i)) {
        placed_at[i] = out.size();
        out.push_back(f);
      }
      continue;
    }
    if (!placed_at.contains(why->second)) {
      placed_at[why->second] = out.size();
      out.push_back(findings[why->second]);
    }
    out[placed_at[why->second]].evidence["also_fails"].push_back(
        {{"part", f.evidence.value("part", f.kind)}, {"verdict", f.evidence.value("verdict", "")}});
  }
  findings = std::move(out);
}

}  // namespace ds::cli::verify
