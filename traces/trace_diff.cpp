#include "trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>

namespace ds::trace {

std::string_view finding_name(DiffFinding::Kind k) {
  switch (k) {
    case DiffFinding::Kind::error_grew: return "error-grew";
    case DiffFinding::Kind::new_failure: return "new-failure";
    case DiffFinding::Kind::new_nan: return "new-nan";
    case DiffFinding::Kind::disappeared: return "disappeared";
    case DiffFinding::Kind::bits_changed: return "bits-changed";
  }
  return "?";
}

bool DiffReport::regressed() const {
  if (current_incomplete || stages_of_steps_only_base > 0) return true;
  for (const auto& f : findings)
    if (f.regression) return true;
  return false;
}

namespace {

using Key = std::tuple<int, int, std::string, int, int>;  // step, layer, stage, sequence, mode
Key key_of(const StageResult& r) { return {r.key.step, r.key.layer, r.key.stage, r.key.seq, int(r.mode)}; }

bool measured(const StageResult& r) {
  return r.status == Status::pass || r.status == Status::fail || r.status == Status::nan ||
         r.status == Status::race;
}

// `cur` is worse than `base` by more than `factor` (a NaN or a growth from exact zero counts).
bool grew(double base, double cur, double factor) {
  if (std::isnan(cur)) return !std::isnan(base);
  if (std::isnan(base)) return false;
  return cur > factor * base && cur > 0;
}

// A member of a JSON object as text, "?" when absent; strings unquoted.
std::string text_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "?";
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : p->dump();
}

// The prompt a run fed: its token ids when the result stored them, else how many were asked for.
std::string prompt_of(const TraceReader& t) {
  if (t.result() && t.result()->is_object() && t.result()->contains("tokens") &&
      (*t.result())["tokens"].is_array() && !(*t.result())["tokens"].empty()) {
    const auto& ids = (*t.result())["tokens"];
    std::string s = fmt::format("{} token(s): ", ids.size());
    for (std::size_t i = 0; i < ids.size() && i < 8; ++i) s += (i ? "," : "") + ids[i].dump();
    return ids.size() > 8 ? s + ",..." : s;
  }
  return fmt::format("{} token(s)", text_at(t.run(), {"prompt_tokens"}));
}

std::vector<int> steps_of(const TraceReader& t) {
  std::vector<int> steps;
  for (const auto& row : t.rows()) steps.push_back(row.result.key.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

}  // namespace

std::vector<KeyChange> key_changes(const TraceReader& base, const TraceReader& current) {
  std::vector<KeyChange> out;
  auto check = [&](const char* what, std::string b, std::string c) {
    if (b != c) out.push_back({what, std::move(b), std::move(c)});
  };
  check("seed", text_at(base.run(), {"seed"}), text_at(current.run(), {"seed"}));
  check("model", text_at(base.run(), {"model_spec"}), text_at(current.run(), {"model_spec"}));
  check("candidate", text_at(base.run(), {"candidate", "name"}),
        text_at(current.run(), {"candidate", "name"}));
  check("prompt tokens", prompt_of(base), prompt_of(current));
  check("decode steps", text_at(base.run(), {"decode_steps"}), text_at(current.run(), {"decode_steps"}));
  // A run of `run --baseline B` holds B's tensors where the oracle's go: its errors are another measure.
  auto against = [](const TraceReader& t) {
    const std::string b = text_at(t.run(), {"baseline", "name"});
    return b == "?" ? std::string("the oracle") : fmt::format("--baseline {}", b);
  };
  check("judged against", against(base), against(current));
  return out;
}

std::optional<StopChange> compare_stops(const TraceCase& base, const TraceCase& current) {
  const bool b = base.stopped_early(), c = current.stopped_early();
  if (!b && !c) return std::nullopt;
  auto ended = [](const TraceCase& k) {
    return k.finished ? fmt::format("exit {}: {}", k.exit_code, k.verdict) : std::string("did not finish");
  };
  if (b && c)
    return StopChange{
        "case-still-stopped", false,
        fmt::format("stopped in the baseline ({}) and stops now ({})", ended(base), ended(current)),
        current.reason};
  if (c)
    return StopChange{
        "case-stopped", true,
        fmt::format("ran in the baseline ({}), now stops before any stage ({})", ended(base), ended(current)),
        current.reason};
  // A run that now starts but does not finish is INCOMPLETE, which is never better than before.
  return StopChange{"case-now-runs", !current.finished,
                    fmt::format("stopped in the baseline ({}), now runs ({}{})", ended(base), ended(current),
                                current.finished ? "" : ": INCOMPLETE"),
                    base.reason};
}

DiffReport diff_traces(const TraceReader& base, const TraceReader& current, const DiffOptions& opt) {
  DiffReport out;
  out.base_incomplete = base.incomplete();
  out.current_incomplete = current.incomplete();
  std::map<Key, const StageResult*> cur;
  for (const auto& row : current.rows()) cur[key_of(row.result)] = &row.result;
  std::map<Key, bool> seen;
  const std::vector<int> base_steps = steps_of(base), cur_steps = steps_of(current);
  std::set_difference(base_steps.begin(), base_steps.end(), cur_steps.begin(), cur_steps.end(),
                      std::back_inserter(out.steps_only_base));
  std::set_difference(cur_steps.begin(), cur_steps.end(), base_steps.begin(), base_steps.end(),
                      std::back_inserter(out.steps_only_current));
  auto in = [](const std::vector<int>& v, int step) { return std::binary_search(v.begin(), v.end(), step); };
  for (const auto& row : current.rows())
    out.stages_of_steps_only_current += in(out.steps_only_current, row.result.key.step);
  auto add = [&](DiffFinding::Kind kind, const StageResult& r, std::string msg, bool regression = true) {
    out.findings.push_back({kind, r.key, r.mode, std::move(msg), regression});
  };
  for (const auto& row : base.rows()) {
    const StageResult& b = row.result;
    const auto it = cur.find(key_of(b));
    if (it == cur.end() && in(out.steps_only_base, b.key.step)) {
      ++out.only_base;
      ++out.stages_of_steps_only_base;
      continue;
    }
    if (it == cur.end()) {
      ++out.only_base;
      add(DiffFinding::Kind::disappeared, b, "stage is in the baseline but not in the current trace");
      continue;
    }
    ++out.matched;
    seen[it->first] = true;
    const StageResult& c = *it->second;
    if (is_failure(c) && !is_failure(b)) {
      add(DiffFinding::Kind::new_failure, c,
          fmt::format("was {}, now {}{}", status_name(b.status), status_name(c.status),
                      c.note.empty() ? "" : ": " + c.note));
    }
    if (c.m.nan_cand > b.m.nan_cand)
      add(DiffFinding::Kind::new_nan, c, fmt::format("NaN count {} -> {}", b.m.nan_cand, c.m.nan_cand));
    if (measured(b) && measured(c)) {
      for (auto [name, bv, cv] :
           {std::tuple{"max_abs", b.m.max_abs, c.m.max_abs}, std::tuple{"rms", b.m.rms, c.m.rms}})
        if (grew(bv, cv, opt.factor)) {
          add(DiffFinding::Kind::error_grew, c,
              fmt::format("{} grew {:.3g} -> {:.3g} (more than {:g}x)", name, bv, cv, opt.factor));
          break;
        }
      if (b.cand_hash != c.cand_hash && b.cand_hash && c.cand_hash)
        add(DiffFinding::Kind::bits_changed, c, "candidate output bytes changed", false);
    }
  }
  out.only_current = cur.size() - seen.size();
  return out;
}

}  // namespace ds::trace
