#include "history_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "history_records.h"

namespace ds {

namespace {

constexpr double kWidth = 900, kPanelHeight = 320, kLeft = 70, kRight = 230, kTop = 40, kBottom = 90;
// Distinct colours for the lines, taken in turn (a panel with more stages reuses them).
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"};

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The decades the panel's ratios span, with the floor (1) always inside.
std::pair<int, int> decades(const std::vector<const StageTrend*>& shown) {
  double lo = 1, hi = 1;
  for (const StageTrend* st : shown)
    for (const auto& r : st->worst.ratio)
      if (r && *r > 0) {
        lo = std::min(lo, *r);
        hi = std::max(hi, *r);
      }
  int a = int(std::floor(std::log10(lo))), b = int(std::ceil(std::log10(hi)));
  if (a == b) ++b;
  return {a, b};
}

std::string panel(const HistoryView& view, const CaseTrend& c, double top, bool all) {
  std::vector<const StageTrend*> shown;
  for (const StageTrend& st : c.stages)
    if (all || st.worst.first_failed || st.creeping()) shown.push_back(&st);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const std::size_t nights = view.nights.size();
  const auto x_of = [&](std::size_t n) {
    return kLeft + (nights > 1 ? plot_w * double(n) / double(nights - 1) : plot_w / 2);
  };
  const auto [lo, hi] = decades(shown);
  const auto y_of = [&, lo = lo, hi = hi](double r) {
    const double t = (std::log10(std::max(r, 1e-300)) - lo) / double(hi - lo);
    return top + kTop + plot_h * (1 - std::clamp(t, 0.0, 1.0));
  };
  std::string out = fmt::format(R"(<g class="case" data-case="{}">)"
                                "\n",
                                xml_escaped(c.key.key()));
  out += fmt::format(R"(<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>)"
                     "\n",
                     kLeft, top + 22, xml_escaped(c.key.key()));
  // Axes, the decades, the floor.
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>)"
                     "\n",
                     kLeft, top + kTop, plot_w, plot_h);
  for (int d = lo; d <= hi; ++d) {
    const double y = y_of(std::pow(10.0, d));
    out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}" {}/>)"
                       R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)"
                       "\n",
                       kLeft, y, kLeft + plot_w, y, d == 0 ? "#000" : "#ddd",
                       d == 0 ? R"(stroke-width="1.5" class="floor")" : "", kLeft - 6, y + 4,
                       d == 0 ? std::string("1 (floor)") : fmt::format("1e{}", d));
  }
  out += fmt::format("<text x=\"14\" y=\"{:.1f}\" font-size=\"11\" transform=\"rotate(-90 14 {:.1f})\" "
                     R"(text-anchor="middle">error / noise floor</text>)"
                     "\n",
                     top + kTop + plot_h / 2, top + kTop + plot_h / 2);
  for (std::size_t n = 0; n < nights; ++n) {
    const double x = x_of(n), y = top + kTop + plot_h + 14;
    out += fmt::format(R"(<text class="night" x="{:.1f}" y="{:.1f}" font-size="10" )"
                       "transform=\"rotate(30 {:.1f} {:.1f})\">{}</text>"
                       "\n",
                       x, y, x, y, xml_escaped(view.nights[n].label));
  }
  if (shown.empty())
    out += fmt::format(R"(<text x="{}" y="{}" font-size="12">every stage passed every night without creeping)"
                       R"( (--all draws them)</text>)"
                       "\n",
                       kLeft + 10, top + kTop + 20);
  // A line per stage: its worst ratio over layers and modes, night by night (broken where absent).
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const StageTrend& st = *shown[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string points;
    std::string marks;
    const auto flush = [&] {
      if (points.empty()) return;
      out += fmt::format(
          R"(<polyline class="stage" data-stage="{}" fill="none" stroke="{}" stroke-width="2" )"
          R"({}points="{}"/>)"
          "\n",
          xml_escaped(st.stage), colour, st.creeping() ? R"(stroke-dasharray="6 3" )" : "", points);
      points.clear();
    };
    for (std::size_t n = 0; n < nights; ++n) {
      const auto& r = st.worst.ratio[n];
      if (!r) {
        flush();
        continue;
      }
      const double x = x_of(n), y = y_of(*r);
      points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x, y);
      const std::string& status = st.worst.status[n];
      const bool failed = stage_status_failed(status), unfinished = status == "incomplete";
      marks += fmt::format(
          R"(<circle class="{}" data-stage="{}" data-night="{}" cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}" stroke="{}"/>)"
          "\n",
          failed       ? "failed"
          : unfinished ? "unfinished"
                       : "night",
          xml_escaped(st.stage), xml_escaped(view.nights[n].label), x, y, failed || unfinished ? 6 : 3,
          failed || unfinished ? "none" : colour,
          failed       ? "#d62728"
          : unfinished ? "#888"
                       : colour);
    }
    flush();
    out += marks;
    const double ly = top + kTop + 14 + 18 * double(i);
    out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}" stroke-width="2" {}/>)"
                       R"(<text class="legend" x="{}" y="{:.1f}" font-size="11">{}{}{}</text>)"
                       "\n",
                       kWidth - kRight + 12, ly, kWidth - kRight + 36, ly, colour,
                       st.creeping() ? R"(stroke-dasharray="6 3")" : "", kWidth - kRight + 42, ly + 4,
                       xml_escaped(st.stage), st.worst.first_failed ? ", failed" : "",
                       st.creeping() ? ", creeping" : "");
  }
  return out + "</g>\n";
}

}  // namespace

std::string history_svg(const std::string& db, const HistoryView& view, bool all) {
  const double height = 30 + kPanelHeight * double(std::max<std::size_t>(view.cases.size(), 1));
  std::string out = fmt::format(
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      "\n"
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif">)"
      "\n"
      R"(<rect width="100%" height="100%" fill="white"/>)"
      "\n"
      R"(<text x="10" y="20" font-size="13">driftscope history {}: {} night(s), error / noise floor per stage )"
      R"((largest over layers and modes); red ring: failed, grey: unfinished, dashed: creeping</text>)"
      "\n",
      kWidth, height, kWidth, height, xml_escaped(db), view.nights.size());
  if (view.cases.empty())
    out += R"(<text x="10" y="50" font-size="12">no stored case matches</text>)"
           "\n";
  for (std::size_t i = 0; i < view.cases.size(); ++i)
    out += panel(view, view.cases[i], 30 + kPanelHeight * double(i), all);
  return out + "</svg>\n";
}

}  // namespace ds
