#include "history_records.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>

#include "policy.h"
#include "runner.h"
#include "trace_reader.h"

namespace ds {

namespace {

std::string outcome_of(const trace::TraceCase& c, bool incomplete) {
  if (incomplete) return "incomplete";
  if (c.status == trace::kStatusRefused) return "refused";
  if (c.status == trace::kStatusBadInput) return "bad-input";
  if (c.status == trace::kStatusSkipped) return "skipped";
  switch (c.exit_code) {
    case kExitParity: return "pass";
    case kExitFailure: return "fail";
    case kExitUsage: return "bad-input";
    case kExitRefused: return "refused";
    default: return "crashed";
  }
}

// Folds every step (and sequence) of each (stage, layer, mode) into one record, in the order the
// run first judged them.
std::vector<StageRecord> stage_records(const trace::TraceReader& trace) {
  std::vector<StageRecord> out;
  std::map<std::tuple<std::string, int, Mode>, std::size_t> at;
  std::vector<bool> judged;  // per record: a row of it was judged (neither filled nor expected)
  for (const trace::TraceRow& row : trace.rows()) {
    const StageResult& r = row.result;
    const auto [it, fresh] = at.try_emplace({r.key.stage, r.key.layer, r.mode}, out.size());
    if (fresh) {
      // Until a row of it is judged: filled, or missing/skipped where the policy expected it.
      const std::string unjudged =
          r.expected ? std::string(kStageExpected) : std::string(status_name(r.status));
      out.push_back({r.key.stage, r.key.layer, std::string(mode_name(r.mode)), unjudged, std::nullopt, -1});
      judged.push_back(false);
    }
    StageRecord& s = out[it->second];
    const bool counts = r.status != Status::filled && !r.expected;
    if (counts && !judged[it->second]) {
      s.status = std::string(status_name(Status::pass));
      judged[it->second] = true;
    }
    // The first failing row names the stage's status for the night; later ones add nothing.
    if (is_failure(r) && s.status == status_name(Status::pass)) s.status = std::string(status_name(r.status));
    if (const auto q = floor_ratio(r); q && (!s.ratio || *q > *s.ratio)) {
      s.ratio = q;
      s.worst_step = r.key.step;
    }
  }
  return out;
}

}  // namespace

bool stage_status_failed(std::string_view status) {
  return status != status_name(Status::pass) && status != status_name(Status::filled) &&
         status != kStageExpected;
}

std::string CaseRecord::key() const { return trace::case_key(model, candidate, seed, probe); }

std::optional<double> floor_ratio(const StageResult& r) {
  if (r.status == Status::filled || r.status == Status::missing || r.status == Status::skipped ||
      r.status == Status::crashed || r.status == Status::shape_mismatch)
    return std::nullopt;
  if (std::isnan(r.floor_max_abs) || std::isnan(r.floor_rms)) return std::nullopt;
  const bool chained = r.mode == Mode::chained;
  // The floors the judge holds the stage to: a chained stage is not held below the error an honest
  // step carried in from its own inputs (policy.h chained_floor).
  const double floor_max =
      floor_of(chained ? chained_floor(r.floor_max_abs, r.local.carried_max_abs) : r.floor_max_abs,
               r.cand_dtype, r.m.ref_rms);
  const double floor_rms = floor_of(chained ? chained_floor(r.floor_rms, r.local.carried_rms) : r.floor_rms,
                                    r.cand_dtype, r.m.ref_rms);
  if (!(floor_max > 0) || !(floor_rms > 0)) return std::nullopt;
  const double q = std::fmax(r.m.max_abs / floor_max, r.m.rms / floor_rms);
  if (!std::isfinite(q) || std::isnan(r.m.max_abs) || std::isnan(r.m.rms)) return std::nullopt;
  return q;
}

std::vector<CaseRecord> read_night(const std::vector<std::string>& files) {
  std::vector<CaseRecord> out;
  std::map<std::string, std::string> seen;  // case key -> the trace it came from
  for (const std::string& file : files) {
    try {
      const std::vector<trace::TraceCase> cases = trace::list_cases(file);
      for (const trace::TraceCase& c : cases) {
        const trace::TraceReader trace(file, c.group);
        const auto incomplete = trace.incomplete();
        CaseRecord rec;
        rec.model = c.model;
        rec.candidate = c.candidate;
        rec.probe = c.probe;
        rec.seed = c.seed;
        rec.outcome = outcome_of(c, incomplete.has_value());
        if (!incomplete || c.status == trace::kStatusWriteFailed) rec.exit_code = c.exit_code;
        rec.verdict = incomplete ? fmt::format("INCOMPLETE: {}", *incomplete) : c.verdict;
        rec.source = c.group == "/" ? file : fmt::format("{}:{}", file, c.group);
        rec.stages = stage_records(trace);
        if (const auto [it, fresh] = seen.try_emplace(rec.key(), rec.source); !fresh)
          throw InputError(fmt::format("{} and {} both hold the case {}: one night holds each case once",
                                       it->second, rec.source, rec.key()));
        out.push_back(std::move(rec));
      }
    } catch (const trace::TraceError& e) {
      // The reader's message names the file and what is wrong with it.
      throw InputError(fmt::format("history add: {}", e.what()));
    }
  }
  return out;
}

}  // namespace ds
