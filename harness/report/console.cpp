#include "console.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>

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
    mismatch = fmt::format("{} ({} of {})", m.first_mismatch, m.mismatches, m.numel);
  } else if (r.status == Status::missing || r.status == Status::shape_mismatch ||
             r.status == Status::crashed || r.status == Status::filled || r.status == Status::race)
    mismatch = r.note;
  const bool measured = r.status != Status::missing && r.status != Status::shape_mismatch &&
                        r.status != Status::crashed && r.status != Status::filled;
  return fmt::format("{:>4} {:>5}  {:<12} {:<8} {} {:>10} {:>10} {:>8} {:>12}  {}", r.key.step,
                     layer_str(r.key.layer), r.key.stage, mode_name(r.mode), status,
                     measured ? num(m.max_abs) : "-", measured ? num(m.mean_abs) : "-",
                     measured ? fmt::format("{:.0f}", m.max_ulp) : "-",
                     measured ? fmt::format("{:.8f}", m.cosine) : "-", mismatch);
}

namespace {

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

// Why an element-wise rule failed, when the policy left no note of its own.
std::string tolerance_note(const StageResult& r) {
  return fmt::format(
      "{} of {} elements outside atol {:.3g} + rtol {:.3g} x |ref|; max |diff| {} at flat index {}",
      r.m.mismatches, r.m.numel, r.m.atol, r.m.rtol, num(r.m.max_abs), r.m.max_abs_index);
}

}  // namespace

std::string against_baseline(const RunReport& report) {
  return report.baseline.empty() ? std::string()
                                 : fmt::format(", against baseline {} (not the oracle)", report.baseline);
}

void print_report(std::FILE* out, const RunReport& report, const ConsoleOptions& opt) {
  const StageCounts counts = count_stages(report.results);
  if (!opt.all_rows && counts.failed == 0 && counts.judged > 0) {
    if (const StageResult* w = closest_to_failing(report.results))
      fmt::print(out, "All {} judged stages pass (`--all` prints every row). Closest to its tolerance:\n{}\n",
                 counts.judged, format_stage_line(*w, opt.color));
  } else {
    fmt::print(out, "{:>4} {:>5}  {:<12} {:<8} {:<8} {:>10} {:>10} {:>8} {:>12}  {}\n", "step", "layer",
               "stage", "mode", "status", "max_diff", "avg_diff", "max_ulp", "cosine", "first_mismatch");
    for (const auto& r : report.results) {
      const bool bad = is_failure(r);
      if (opt.only_failures && !bad) continue;
      fmt::print(out, "{}\n", format_stage_line(r, opt.color));
      if (bad && (r.status == Status::fail || r.status == Status::nan))
        fmt::print(out, "{:>14}why: {}\n", "", r.note.empty() ? tolerance_note(r) : r.note);
      if (bad && !r.head_ref.empty()) {
        const std::int64_t to = r.head_from + std::int64_t(r.head_ref.size());
        if (report.baseline.empty())
          fmt::print(out, "{:>14}ref[{}..{}]:  {}\n", "", r.head_from, to, values(r.head_ref));
        else
          fmt::print(out, "{:>14}base[{}..{}]: {}\n", "", r.head_from, to, values(r.head_ref));
        fmt::print(out, "{:>14}cand[{}..{}]: {}\n", "", r.head_from, to, values(r.head_cand));
      }
    }
    if (counts.failed)
      fmt::print(
          out,
          "\nfirst_mismatch: the flat index of the first element outside that row's tolerance (elements "
          "outside, of all);\nchained rows are judged against the noise floor, so their counts differ "
          "from the isolated rows'.\n");
  }
  const StageCounts& n = counts;
  fmt::print(out, "\n{} stages judged{}, {} failed", n.judged,
             report.baseline.empty() ? std::string() : fmt::format(" against baseline {}", report.baseline),
             n.failed);
  if (n.filled) fmt::print(out, "; {} filled by the reference (not judged)", n.filled);
  fmt::print(out, "\n");
  if (const auto& f = report.first_failure) {
    fmt::print(out, "First failing stage: {} of {} at step {} ({} mode): {}", f->key.stage,
               f->key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", f->key.layer),
               f->key.step, mode_name(f->mode), status_name(f->status));
    if (f->m.first_mismatch >= 0)
      fmt::print(out, ", first mismatch at flat index {} = {} of {} (ref {:.7g}, cand {:.7g}), max |diff| {}",
                 f->m.first_mismatch, shape_str(unravel(f->m.first_mismatch, f->shape)), shape_str(f->shape),
                 f->m.first_ref, f->m.first_cand, num(f->m.max_abs));
    fmt::print(out, "\n");
  }
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
    fmt::print(out, "Logits ({}): {}; max KL {:.3e} nats, top-1 agreement {:.1f}%, greedy token {}\n",
               mode_name(l.mode), verdict, l.max_kl, 100 * l.min_top1,
               l.first_token_divergence < 0
                   ? std::string("never diverges")
                   : fmt::format("first differs at step {}", l.first_token_divergence));
  }
  if (!report.drift.empty()) fmt::print(out, "{}\n", report.drift);
  fmt::print(out, "{}\n", report.verdict);
}

}  // namespace ds
