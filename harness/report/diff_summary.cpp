// Groups trace_diff's findings (one per kind, mode and stage) into one change per stage, so one
// bug reads as one line where it starts rather than three per stage downstream of it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "console.h"
#include "diff_report.h"
#include "stage_catalog.h"

namespace ds {

namespace {

using trace::DiffFinding;
using StageId = std::tuple<int, int, std::string, int>;  // step, layer, stage, sequence
StageId id_of(const StageKey& k) { return {k.step, k.layer, k.stage, k.seq}; }

// Most severe first: a NaN or a failure is what a reviewer must see; grown error is a warning
// sign; changed bits alone are informational.
int severity(DiffFinding::Kind k) {
  switch (k) {
    case DiffFinding::Kind::new_nan: return 0;
    case DiffFinding::Kind::new_failure: return 1;
    case DiffFinding::Kind::disappeared: return 2;
    case DiffFinding::Kind::error_grew: return 3;
    case DiffFinding::Kind::bits_changed: return 4;
  }
  return 5;
}

std::string build_of(const trace::TraceReader& t) {
  const auto c = t.run().find("candidate");
  if (c == t.run().end() || !c->is_object() || !c->contains("plugin") || !(*c)["plugin"].is_object())
    return "built-in";
  const auto& p = (*c)["plugin"];
  return fmt::format("{} version {} sha256 {}", p.value("path", std::string("?")),
                     p.value("version", std::string("?")), p.value("sha256", std::string("?")));
}

}  // namespace

std::string stage_where(const StageChange& c) {
  std::vector<std::string_view> modes;
  for (Mode m : c.modes) modes.push_back(mode_name(m));
  return fmt::format("step {} {} {}{} ({})", c.key.step,
                     c.key.layer == kModelLayer ? std::string("model") : fmt::format("layer {}", c.key.layer),
                     c.key.stage, c.batch ? fmt::format(" of sequence {}", c.key.seq) : std::string(),
                     fmt::join(modes, ", "));
}

const StageChange* CaseDiff::first_regression() const {
  return !changes.empty() && changes.front().regression ? &changes.front() : nullptr;
}

bool DiffOutcome::regressed() const {
  if (!cases_gone.empty()) return true;
  return std::any_of(cases.begin(), cases.end(), [](const CaseDiff& c) { return c.regressed; });
}

CaseDiff summarise_diff(const trace::TraceReader& base, const trace::TraceReader& current,
                        const trace::DiffOptions& opt) {
  CaseDiff out;
  out.key = current.trace_case().key();
  out.key_changes = trace::key_changes(base, current);
  if (const std::string a = build_of(base), b = build_of(current); a != b)
    out.build_change = fmt::format("baseline {} / current {}", a, b);
  out.report = trace::diff_traces(base, current, opt);

  std::map<StageId, std::size_t> run_order;
  for (const auto& row : base.rows()) run_order.try_emplace(id_of(row.result.key), run_order.size());
  std::map<std::pair<StageId, int>, const StageResult*> now;
  bool batch = false;  // a batch of several sequences: each change names its sequence
  for (const auto& row : current.rows()) {
    const StageResult& r = row.result;
    now[{id_of(r.key), int(r.mode)}] = &r;
    batch |= r.key.seq > 0;
  }
  auto result_now = [&](const StageKey& k, Mode m) -> const StageResult* {
    const auto it = now.find({id_of(k), int(m)});
    return it == now.end() ? nullptr : it->second;
  };

  std::map<StageId, std::vector<const DiffFinding*>> by_stage;
  for (const auto& f : out.report.findings) by_stage[id_of(f.key)].push_back(&f);
  for (auto& [id, found] : by_stage) {
    std::stable_sort(found.begin(), found.end(), [](const DiffFinding* a, const DiffFinding* b) {
      return std::pair(severity(a->kind), int(a->mode)) < std::pair(severity(b->kind), int(b->mode));
    });
    StageChange c;
    const DiffFinding& worst = *found.front();
    c.key = worst.key;
    c.batch = batch;
    c.worst = worst.kind;
    c.evidence = worst.message;
    bool regressed_isolated = false, regressed_chained = false;
    const bool any_regression =
        std::any_of(found.begin(), found.end(), [](const DiffFinding* f) { return f->regression; });
    for (const DiffFinding* f : found) {
      // A regressed stage names the modes it regressed in, not those whose bits alone changed.
      if ((f->regression || !any_regression) &&
          std::find(c.modes.begin(), c.modes.end(), f->mode) == c.modes.end())
        c.modes.push_back(f->mode);
      const std::string name(trace::finding_name(f->kind));
      if (f->kind != worst.kind && std::find(c.also.begin(), c.also.end(), name) == c.also.end())
        c.also.push_back(name);
      c.regression |= f->regression;
      (f->mode == Mode::isolated ? regressed_isolated : regressed_chained) |= f->regression;
    }
    std::sort(c.modes.begin(), c.modes.end());
    // A failure the policy left no note for says nothing past "now fail": add the console's why.
    const StageResult* r = result_now(worst.key, worst.mode);
    if (worst.kind == DiffFinding::Kind::new_failure && r && r->note.empty())
      c.evidence += ": " + failure_why(*r);
    if (regressed_chained && !regressed_isolated) {
      const StageResult* chained = result_now(c.key, Mode::chained);
      const StageResult* isolated = result_now(c.key, Mode::isolated);
      c.inherited = chained && isolated && is_inherited_failure(*chained, *isolated);
    }
    out.regressions += c.regression;
    out.changes.push_back(std::move(c));
  }
  auto order = [&](const StageChange& c) {
    const auto it = run_order.find(id_of(c.key));
    return it == run_order.end() ? run_order.size() : it->second;
  };
  // Regressions first, each group in run order: the first line is where the regression starts.
  std::stable_sort(out.changes.begin(), out.changes.end(), [&](const StageChange& a, const StageChange& b) {
    return std::pair(!a.regression, order(a)) < std::pair(!b.regression, order(b));
  });
  out.regressions += out.report.stages_of_steps_only_base > 0;
  out.regressed = out.report.regressed();
  return out;
}

}  // namespace ds
