#include "console.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <map>
#include <tuple>

#include "stage_catalog.h"

namespace ds {

namespace {

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.3e}", v);
}

std::string layer_str(int layer) { return layer == kModelLayer ? "-" : fmt::format("{}", layer); }

std::string values(const std::vector<double>& v) {
  std::vector<std::string> s;
  for (double x : v) s.push_back(fmt::format("{:.7g}", x));
  return fmt::format("[{}]", fmt::join(s, ", "));
}

bool measured(Status s) {
  return s != Status::missing && s != Status::shape_mismatch && s != Status::crashed && s != Status::filled;
}

// `batched`: the run held several sequences, so the line names which one.
std::string where(const StageResult& r, bool batched = false) {
  return fmt::format(
      "{} of {} at step {}{} ({} mode)", r.key.stage,
      r.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", r.key.layer),
      r.key.step, batched ? fmt::format(" of sequence {}", r.key.seq) : std::string(), mode_name(r.mode));
}

// Why an element-wise rule failed, when the policy left no note of its own.
std::string tolerance_note(const StageResult& r) {
  return fmt::format(
      "{} of {} elements outside atol {:.3g} + rtol {:.3g} x |ref|; max |diff| {} at flat index {}",
      r.m.mismatches, r.m.numel, r.m.atol, r.m.rtol, num(r.m.max_abs), r.m.max_abs_index);
}

// The element a failing row is shown by, in words: which one and why that one.
std::string evidence_text(const StageResult& r) {
  const Metrics& m = r.m;
  const std::int64_t at = evidence_index(m);
  if (at < 0) return std::string();
  const std::string coords =
      r.shape.empty() ? std::string()
                      : fmt::format(" = {} of {}", shape_str(unravel(at, r.shape)), shape_str(r.shape));
  if (at == m.first_mismatch)
    return fmt::format("first mismatch at flat index {}{} (ref {:.7g}, cand {:.7g}); max |diff| {}", at,
                       coords, m.first_ref, m.first_cand, num(m.max_abs));
  if (at == m.first_nan) return fmt::format("first NaN at flat index {}{}", at, coords);
  return fmt::format(
      "no element outside the band; the largest difference, {}, is at flat index {}{} (ref {:.7g}, cand "
      "{:.7g})",
      num(m.max_abs), at, coords, m.max_abs_ref, m.max_abs_cand);
}

std::string header_line() {
  return fmt::format("{:>4} {:>5}  {:<12} {:<8} {:<8} {:>10} {:>10} {:>8} {:>12}  {}", "step", "layer",
                     "stage", "mode", "status", "max_diff", "avg_diff", "max_ulp", "cosine",
                     "first_mismatch");
}

// The worst judged stage against its own tolerance: what a passing run's summary names.
const StageResult* closest_to_failing(const std::vector<StageResult>& results) {
  const StageResult* worst = nullptr;
  double worst_score = -1;
  for (const auto& r : results) {
    if (r.status != Status::pass) continue;
    const double tol = r.m.atol + r.m.rtol * r.m.ref_rms;
    const double score = tol > 0 ? r.m.max_abs / tol : r.m.max_abs;
    if (score > worst_score) {
      worst_score = score;
      worst = &r;
    }
  }
  return worst;
}

void print_values(std::FILE* out, const RunReport& report, const StageResult& r, int indent) {
  if (r.head_ref.empty()) return;
  const std::int64_t to = r.head_from + std::int64_t(r.head_ref.size());
  const char* side = report.baseline.empty() ? "ref" : "base";
  fmt::print(out, "{:>{}}{}[{}..{}]: {}{}\n", "", indent, side, r.head_from, to,
             report.baseline.empty() ? " " : "", values(r.head_ref));
  fmt::print(out, "{:>{}}cand[{}..{}]: {}\n", "", indent, r.head_from, to, values(r.head_cand));
}

// The cause first: the first failing stage, why, the element it is shown by and both sides'
// values around it, before any table (issue: a kernel author reads the first screen only).
void print_cause(std::FILE* out, const RunReport& report) {
  const StageResult& f = *report.first_failure;
  fmt::print(out, "First failing stage: {}: {}\n", where(f, report.batch_size > 1), status_name(f.status));
  const bool judged = f.status == Status::fail || f.status == Status::nan || is_run_finding(f.status);
  if (!f.note.empty() || judged) fmt::print(out, "  why: {}\n", f.note.empty() ? tolerance_note(f) : f.note);
  if (judged)
    if (const std::string e = evidence_text(f); !e.empty()) fmt::print(out, "  {}\n", e);
  print_values(out, report, f, 2);
}

// Rows of the chained lane that fail only on the error fed to them (their isolated twin passes).
std::vector<bool> inherited_rows(const std::vector<StageResult>& results) {
  std::map<std::tuple<int, int, std::string, int>, const StageResult*> isolated;
  for (const auto& r : results)
    if (r.mode == Mode::isolated) isolated[{r.key.step, r.key.layer, r.key.stage, r.key.seq}] = &r;
  std::vector<bool> out(results.size(), false);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const auto it = isolated.find({r.key.step, r.key.layer, r.key.stage, r.key.seq});
    out[i] = it != isolated.end() && is_inherited_failure(r, *it->second);
  }
  return out;
}

// One line standing for every inherited row of a layer (all steps): how many, which stages, and
// that --all lists them.
struct InheritedGroup {
  std::size_t first_row = 0, count = 0;
  int step_min = 0, step_max = 0;
  std::string first_stage, last_stage;
};

void print_inherited(std::FILE* out, int layer, const InheritedGroup& g) {
  const std::string steps = g.step_min == g.step_max ? fmt::format("{:>4}", g.step_min)
                                                     : fmt::format("{}-{}", g.step_min, g.step_max);
  const std::string stages =
      g.count == 1 ? g.first_stage : fmt::format("{} .. {}", g.first_stage, g.last_stage);
  fmt::print(out,
             "{:>4} {:>5}  {} chained row(s) inherited ({}): fail only on the error fed to them, "
             "their isolated twins pass (--all lists them)\n",
             steps, layer_str(layer), g.count, stages);
}

// The passing rows before the first failure in its block (same step, layer, sequence and mode),
// by index: listed with the failures unless --only-failures, so the table shows the stages that
// still agreed right up to where the candidate diverges.
std::vector<bool> leading_to_first_failure(const RunReport& report) {
  const auto& results = report.results;
  std::vector<bool> out(results.size(), false);
  const auto& f = report.first_failure;
  if (!f) return out;
  const auto same_block = [&](const StageResult& r) {
    return r.key.step == f->key.step && r.key.layer == f->key.layer && r.key.seq == f->key.seq &&
           r.mode == f->mode;
  };
  std::size_t at = 0;
  while (at < results.size() && !(same_block(results[at]) && results[at].key.stage == f->key.stage)) ++at;
  for (std::size_t i = 0; i < at && at < results.size(); ++i)
    out[i] = results[i].status == Status::pass && same_block(results[i]);
  return out;
}

void print_table(std::FILE* out, const RunReport& report, const ConsoleOptions& opt,
                 const StageCounts& counts) {
  const auto& results = report.results;
  const std::vector<bool> inherited = inherited_rows(results);
  const std::vector<bool> context = leading_to_first_failure(report);
  std::map<int, InheritedGroup> groups;  // by layer: collapsed unless --all
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!inherited[i]) continue;
    const auto& r = results[i];
    auto [it, fresh] = groups.try_emplace(r.key.layer);
    InheritedGroup& g = it->second;
    if (fresh) {
      g.first_row = i;
      g.step_min = g.step_max = r.key.step;
      g.first_stage = r.key.stage;
    }
    ++g.count;
    g.step_min = std::min(g.step_min, r.key.step);
    g.step_max = std::max(g.step_max, r.key.step);
    g.last_stage = r.key.stage;
  }
  // Without --all a failing run lists its failures and the passing rows leading to the first
  // failure in its block; other passing and filled rows are counted below. --only-failures lists
  // failures alone.
  const bool every_row = opt.all_rows && !opt.only_failures;
  std::size_t passing_hidden = 0, filled_hidden = 0;
  fmt::print(out, "{}\n", header_line());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const bool bad = is_failure(r);
    if (!bad && !every_row && (opt.only_failures || !context[i])) {
      (r.status == Status::filled ? filled_hidden : passing_hidden) += 1;
      continue;
    }
    if (inherited[i] && !opt.all_rows) {
      const InheritedGroup& g = groups.at(r.key.layer);
      if (g.first_row == i) print_inherited(out, r.key.layer, g);
      continue;
    }
    fmt::print(out, "{}\n", format_stage_line(r, opt.color));
    if (bad && (r.status == Status::fail || r.status == Status::nan))
      fmt::print(out, "{:>14}why: {}\n", "", r.note.empty() ? tolerance_note(r) : r.note);
    // The first failure's values are above; the others' with --all.
    if (bad && opt.all_rows) print_values(out, report, r, 14);
  }
  if (passing_hidden || filled_hidden) {
    std::vector<std::string> parts;
    if (passing_hidden) parts.push_back(fmt::format("{} passing", passing_hidden));
    if (filled_hidden) parts.push_back(fmt::format("{} filled by the reference (not judged)", filled_hidden));
    fmt::print(out, "({} row(s) not listed; --all lists every row)\n", fmt::join(parts, ", "));
  }
  if (counts.failed)
    fmt::print(out,
               "first_mismatch: the flat index of the first element outside that row's tolerance (elements "
               "outside, of all);\nchained rows are judged against the noise floor, so their counts differ "
               "from the isolated rows'.\n");
}

// What the logits line says of disagreeing greedy tokens: a flip the logits' own tolerance allows
// is a near-tie in the reference, not a wrong token.
std::string top1_text(const LaneLogits& l, bool logits_pass) {
  std::string s = fmt::format("top-1 agreement {:.1f}%", 100 * l.min_top1);
  if (l.disagreements == 0) return s;
  if (logits_pass)
    return s +
           fmt::format(
               " (the {} {}: the reference's top-1 logit and the candidate's pick are within {:.3g} of each "
               "other, and the logits are within policy)",
               l.disagreements,
               l.disagreements == 1 ? "disagreement is a near-tie" : "disagreements are near-ties",
               l.max_disagree_margin);
  return s + fmt::format(" ({} row(s) disagree)", l.disagreements);
}

}  // namespace

std::string format_stage_line(const StageResult& r, bool color) {
  const bool bad = is_failure(r);
  std::string status(status_name(r.status));
  for (char& ch : status) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  status = fmt::format("{:<8}", status);
  if (color)
    status = fmt::format("\x1b[{}m{}\x1b[0m", bad ? "31;1" : r.status == Status::filled ? "2" : "32", status);
  const auto& m = r.m;
  std::string mismatch = "-";
  if (r.status == Status::fail || r.status == Status::nan) {
    if (m.first_mismatch >= 0)
      mismatch = fmt::format("{} ({} of {})", m.first_mismatch, m.mismatches, m.numel);
    else if (m.first_nan >= 0)
      mismatch = fmt::format("NaN at {} ({} of {} NaN)", m.first_nan, m.nan_cand, m.numel);
    else  // a statistical limit: every element inside the band, shown by its largest difference
      mismatch = fmt::format("none outside; max at {} (0 of {})", m.max_abs_index, m.numel);
  } else if (!measured(r.status) || is_run_finding(r.status))
    mismatch = r.note;
  const bool shown = measured(r.status);
  return fmt::format("{:>4} {:>5}  {:<12} {:<8} {} {:>10} {:>10} {:>8} {:>12}  {}", r.key.step,
                     layer_str(r.key.layer), r.key.stage, mode_name(r.mode), status,
                     shown ? num(m.max_abs) : "-", shown ? num(m.mean_abs) : "-",
                     shown ? fmt::format("{:.0f}", m.max_ulp) : "-",
                     shown ? fmt::format("{:.8f}", m.cosine) : "-", mismatch);
}

std::string against_baseline(const RunReport& report) {
  return report.baseline.empty() ? std::string()
                                 : fmt::format(", against baseline {} (not the oracle)", report.baseline);
}

void print_report(std::FILE* out, const RunReport& report, const ConsoleOptions& opt) {
  const StageCounts counts = count_stages(report.results);
  if (report.first_failure) {
    print_cause(out, report);
    fmt::print(out, "\n");
  }
  if (!opt.all_rows && counts.failed == 0 && counts.judged > 0) {
    if (const StageResult* w = closest_to_failing(report.results))
      fmt::print(out,
                 "All {} judged stages pass (`--all` prints every row). Closest to its tolerance:\n{}\n{}\n",
                 counts.judged, header_line(), format_stage_line(*w, opt.color));
  } else if (!report.results.empty()) {
    print_table(out, report, opt, counts);
  }
  fmt::print(out, "\n{} stages judged{}, {} failed", counts.judged,
             report.baseline.empty() ? std::string() : fmt::format(" against baseline {}", report.baseline),
             counts.failed);
  if (counts.filled) fmt::print(out, "; {} filled by the reference (not judged)", counts.filled);
  fmt::print(out, "\n");
  for (const auto& l : report.logits) {
    // The logits stage's own verdict comes first: greedy agreement says nothing about whether the
    // logits are within tolerance.
    const StageResult* failing = nullptr;
    bool judged = false;
    for (const auto& r : report.results)
      if (r.mode == l.mode && r.key.stage == "logits" && r.status != Status::filled) {
        judged = true;
        if (!failing && is_failure(r)) failing = &r;
      }
    const std::string verdict = failing  ? fmt::format("the logits stage FAILS at step {} ({})",
                                                       failing->key.step, status_name(failing->status))
                                : judged ? std::string("the logits stage passes")
                                         : std::string("the logits stage was not judged");
    fmt::print(out, "Logits ({}): {}; max KL {:.3e} nats, {}, greedy token {}\n", mode_name(l.mode), verdict,
               l.max_kl, top1_text(l, judged && !failing),
               l.first_token_divergence < 0
                   ? std::string("never diverges")
                   : fmt::format("first differs at step {}", l.first_token_divergence));
  }
  if (!report.local_check.empty()) fmt::print(out, "{}\n", report.local_check);
  if (!report.drift.empty())
    fmt::print(out, "{}\n", report.drift);
  else if (!report.results.empty() && !drift_checked(report.results) &&
           report.verdict.find(kDriftNotChecked) == std::string::npos)
    fmt::print(out, "Drift: {}.\n", kDriftNotChecked);
  fmt::print(out, "{}\n", report.verdict);
}

std::string failure_why(const StageResult& r) { return r.note.empty() ? tolerance_note(r) : r.note; }

}  // namespace ds
