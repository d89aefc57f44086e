#include "history_trend.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ds {

namespace {

constexpr std::string_view kIncomplete = "incomplete";

// A night's stage status that is a failure of the stage itself ("" is absent, and an unfinished
// run is the case's failure, not the stage's).
bool failed(std::string_view status) {
  return !status.empty() && status != kIncomplete && stage_status_failed(status);
}

// Which of its layers' statuses a stage shows for a night: a failure, else incomplete, else pass.
int precedence(std::string_view status) {
  return failed(status) ? 3 : status == kIncomplete ? 2 : status == status_name(Status::pass) ? 1 : 0;
}

void conclude(Series& s) {
  for (std::size_t n = 0; n < s.status.size(); ++n)
    if (failed(s.status[n])) {
      s.first_failed = n;
      break;
    }
  s.creeping = is_creeping(s.ratio, s.status);
}

Series empty_series(std::size_t nights) {
  Series s;
  s.ratio.assign(nights, std::nullopt);
  s.status.assign(nights, "");
  return s;
}

}  // namespace

bool StageTrend::creeping() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerTrend& l) { return l.series.creeping; });
}

bool case_outcome_failed(const std::string& outcome) { return outcome != "pass" && outcome != "skipped"; }

bool is_creeping(const std::vector<std::optional<double>>& ratio, const std::vector<std::string>& status) {
  std::vector<double> values;
  for (std::size_t n = 0; n < ratio.size(); ++n) {
    const std::string_view st = n < status.size() ? std::string_view(status[n]) : std::string_view();
    if (failed(st)) return false;  // not still passing
    // A night without a value (absent, unfinished, no floor) is a gap, neither rise nor fall.
    if (ratio[n] && st != kIncomplete) values.push_back(*ratio[n]);
  }
  if (int(values.size()) < kCreepMinNights) return false;
  const double first = values.front(), last = values.back();
  if (!(first > 0) || last < kCreepGrowth * first || last < 1) return false;
  double highest = first;
  for (double v : values) {
    if (v < kCreepSlack * highest) return false;
    highest = std::max(highest, v);
  }
  return true;
}

HistoryView build_history_view(const std::vector<NightInfo>& nights, const std::vector<StoredCase>& cases,
                               std::optional<std::size_t> last) {
  HistoryView view;
  const std::size_t from = last && *last < nights.size() ? nights.size() - *last : 0;
  view.nights.assign(nights.begin() + std::ptrdiff_t(from), nights.end());
  const std::size_t n_nights = view.nights.size();
  std::map<std::string, std::size_t> case_at;
  // Per case: (stage) -> index in stages, (stage, layer, mode) -> index in that stage's layers.
  std::vector<std::map<std::string, std::size_t>> stage_at;
  std::vector<std::map<std::tuple<std::string, int, std::string>, std::size_t>> layer_at;
  for (const StoredCase& sc : cases) {
    if (sc.night < from) continue;
    const std::size_t night = sc.night - from;
    const CaseRecord& rec = sc.record;
    const auto [it, fresh] = case_at.try_emplace(rec.key(), view.cases.size());
    if (fresh) {
      CaseTrend& t = view.cases.emplace_back();
      t.key = rec;
      t.key.stages.clear();
      t.outcomes.assign(n_nights, "");
      t.verdicts.assign(n_nights, "");
      stage_at.emplace_back();
      layer_at.emplace_back();
    }
    CaseTrend& t = view.cases[it->second];
    t.outcomes[night] = rec.outcome;
    t.verdicts[night] = rec.verdict;
    const bool incomplete = rec.outcome == kIncomplete;
    for (const StageRecord& s : rec.stages) {
      const auto [si, new_stage] = stage_at[it->second].try_emplace(s.stage, t.stages.size());
      if (new_stage) t.stages.push_back({s.stage, empty_series(n_nights), {}});
      StageTrend& st = t.stages[si->second];
      const auto [li, new_layer] =
          layer_at[it->second].try_emplace({s.stage, s.layer, s.mode}, st.layers.size());
      if (new_layer) st.layers.push_back({s.layer, s.mode, empty_series(n_nights)});
      Series& ls = st.layers[li->second].series;
      // An unfinished run's flushed rows are kept, but a stage that did not fail there did not
      // pass either.
      ls.status[night] = incomplete && !stage_status_failed(s.status) ? std::string(kIncomplete) : s.status;
      ls.ratio[night] = s.ratio;
      Series& w = st.worst;
      if (s.ratio && (!w.ratio[night] || *s.ratio > *w.ratio[night])) w.ratio[night] = s.ratio;
      const std::string& mine = ls.status[night];
      if (w.status[night].empty() || precedence(mine) > precedence(w.status[night])) w.status[night] = mine;
    }
  }
  for (CaseTrend& t : view.cases) {
    for (std::size_t n = 0; n < n_nights; ++n)
      if (!t.outcomes[n].empty() && case_outcome_failed(t.outcomes[n])) {
        t.first_failed = n;
        break;
      }
    for (StageTrend& st : t.stages) {
      for (LayerTrend& l : st.layers) conclude(l.series);
      conclude(st.worst);
      // The worst-of-layers series mixes layers night by night; a stage creeps where one of its
      // layers does.
      st.worst.creeping = st.creeping();
    }
  }
  return view;
}

}  // namespace ds
