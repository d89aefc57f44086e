#include "history_show.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ds {

namespace {

// The console shows the numbers of this many nights, the latest; the sparkline covers them all.
constexpr std::size_t kNumberedNights = 6;

std::string night_name(const HistoryView& view, std::size_t n) {
  return fmt::format("night {} ({})", n + 1, view.nights[n].label);
}

// A night's ratio, marked * where the stage failed and ? where the case's run did not finish.
std::string cell(const Series& s, std::size_t n) {
  const std::string& st = s.status[n];
  if (st.empty()) return "-";
  const char* mark = st == "incomplete" ? "?" : stage_status_failed(st) ? "*" : "";
  return s.ratio[n] ? fmt::format("{:.3g}{}", *s.ratio[n], mark) : fmt::format("n/a{}", mark);
}

// "layer 1 (chained) 1.5x -> 5x over 3 nights" for each creeping layer of a stage.
std::string creeping_text(const StageTrend& st) {
  std::string out;
  for (const LayerTrend& l : st.layers) {
    if (!l.series.creeping) continue;
    std::vector<double> v;
    for (const auto& r : l.series.ratio)
      if (r) v.push_back(*r);
    out += fmt::format("{}{} ({}) {:.3g}x -> {:.3g}x over {} nights", out.empty() ? "" : "; ",
                       l.layer < 0 ? std::string("model") : fmt::format("layer {}", l.layer), l.mode,
                       v.front(), v.back(), v.size());
  }
  return out;
}

nlohmann::json optional_values(const std::vector<std::optional<double>>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : v) a.push_back(x ? nlohmann::json(*x) : nlohmann::json());
  return a;
}

nlohmann::json texts(const std::vector<std::string>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : v) a.push_back(x.empty() ? nlohmann::json() : nlohmann::json(x));
  return a;
}

nlohmann::json series_json(const HistoryView& view, const Series& s) {
  return {{"ratios", optional_values(s.ratio)},
          {"statuses", texts(s.status)},
          {"first_failed",
           s.first_failed ? nlohmann::json(view.nights[*s.first_failed].label) : nlohmann::json()},
          {"creeping", s.creeping}};
}

}  // namespace

std::string sparkline(const std::vector<std::optional<double>>& values) {
  static constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  double lo = INFINITY, hi = 0;
  for (const auto& v : values)
    if (v && *v > 0) {
      lo = std::min(lo, *v);
      hi = std::max(hi, *v);
    }
  std::string out;
  for (const auto& v : values) {
    if (!v) {
      out += " ";
    } else if (!(*v > 0) || !(hi > lo)) {
      out += kBlocks[*v > 0 ? 3 : 0];  // a flat series sits mid-height; an exact stage at the bottom
    } else {
      const double t = std::log(*v / lo) / std::log(hi / lo);
      out += kBlocks[std::clamp(int(std::lround(t * 7)), 0, 7)];
    }
  }
  return out;
}

void print_history(std::FILE* out, const std::string& db, const HistoryView& view, bool all) {
  fmt::print(out, "history {}: {} night(s)\n", db, view.nights.size());
  for (std::size_t n = 0; n < view.nights.size(); ++n)
    fmt::print(out, "  night {:<3} {:<32} added {}\n", n + 1, view.nights[n].label, view.nights[n].added_at);
  if (view.cases.empty()) fmt::print(out, "no stored case matches\n");
  const std::size_t shown = std::min(view.nights.size(), kNumberedNights);
  const std::size_t from = view.nights.size() - shown;
  const std::size_t width = std::max<std::size_t>(view.nights.size(), 5);  // the trend column
  for (const CaseTrend& c : view.cases) {
    fmt::print(out, "\ncase {}\n", c.key.key());
    std::string outcomes;
    for (const auto& o : c.outcomes)
      outcomes += fmt::format("{}{}", outcomes.empty() ? "" : " ", o.empty() ? "-" : o);
    fmt::print(out, "  outcome by night: {}\n", outcomes);
    if (c.first_failed)
      fmt::print(out, "  first failed: {}: {}\n", night_name(view, *c.first_failed),
                 c.verdicts[*c.first_failed]);
    std::size_t quiet = 0;
    bool header = false;
    for (const StageTrend& st : c.stages) {
      const bool notable = st.worst.first_failed || st.creeping();
      if (!notable && !all) {
        ++quiet;
        continue;
      }
      if (!header) {
        fmt::print(out,
                   "  {:<14} {:<{}}  {}error/floor, nights {}-{} (* failed, ? unfinished)  first failed\n",
                   "stage", "trend", width, from > 0 ? "... " : "", from + 1, view.nights.size());
        header = true;
      }
      std::string numbers;
      for (std::size_t n = from; n < view.nights.size(); ++n)
        numbers += fmt::format("{:<8}", cell(st.worst, n));
      // The sparkline is UTF-8, several bytes a column: padded by columns, not bytes.
      fmt::print(out, "  {:<14} {}{}  {}{} {}{}\n", st.stage, sparkline(st.worst.ratio),
                 std::string(width - view.nights.size(), ' '), from > 0 ? "... " : "", numbers,
                 st.worst.first_failed ? night_name(view, *st.worst.first_failed) : std::string("-"),
                 st.creeping() ? fmt::format("  creeping: {}", creeping_text(st)) : std::string());
    }
    if (quiet > 0)
      fmt::print(out, "  {} {}stage(s) passed every night without creeping (--all lists them)\n", quiet,
                 header ? "other " : "");
  }
}

nlohmann::json history_json(const std::string& db, const HistoryView& view) {
  nlohmann::json nights = nlohmann::json::array();
  for (const NightInfo& n : view.nights) nights.push_back({{"label", n.label}, {"added_at", n.added_at}});
  nlohmann::json cases = nlohmann::json::array(), creeping = nlohmann::json::array();
  for (const CaseTrend& c : view.cases) {
    nlohmann::json stages = nlohmann::json::array();
    for (const StageTrend& st : c.stages) {
      nlohmann::json layers = nlohmann::json::array();
      for (const LayerTrend& l : st.layers) {
        nlohmann::json j = series_json(view, l.series);
        j["layer"] = l.layer;
        j["mode"] = l.mode;
        layers.push_back(std::move(j));
        if (l.series.creeping) {
          std::vector<double> v;
          for (const auto& r : l.series.ratio)
            if (r) v.push_back(*r);
          creeping.push_back({{"case", c.key.key()},
                              {"stage", st.stage},
                              {"layer", l.layer},
                              {"mode", l.mode},
                              {"from", v.front()},
                              {"to", v.back()},
                              {"nights", v.size()}});
        }
      }
      nlohmann::json j = series_json(view, st.worst);
      j["stage"] = st.stage;
      j["layers"] = std::move(layers);
      stages.push_back(std::move(j));
    }
    cases.push_back({{"key", c.key.key()},
                     {"model", c.key.model},
                     {"candidate", c.key.candidate},
                     {"seed", c.key.seed},
                     {"probe", c.key.probe},
                     {"outcomes", texts(c.outcomes)},
                     {"verdicts", texts(c.verdicts)},
                     {"first_failed",
                      c.first_failed ? nlohmann::json(view.nights[*c.first_failed].label) : nlohmann::json()},
                     {"stages", std::move(stages)}});
  }
  return {{"db", db},
          {"schema_version", kHistorySchemaVersion},
          {"nights", std::move(nights)},
          {"cases", std::move(cases)},
          {"creeping", std::move(creeping)}};
}

}  // namespace ds
