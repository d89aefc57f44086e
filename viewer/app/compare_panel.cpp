// Compare: baseline vs current. A heatmap of the per-cell error ratio per mode (side by side, so
// their rows stay tall enough to label) and the drift curves of both traces overlaid (baseline
// faded).
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>

#include "app.h"
#include "draw_util.h"

namespace ds::view {

void draw_compare(App& app, float width, float height) {
  const TraceModel& base = *app.model;
  const TraceModel& cur = *app.compare;
  draw_run_info(app, base, "baseline");
  ImGui::PushTextWrapPos(0);
  ImGui::Text("current  %s   verdict: %s", cur.path().c_str(), cur.info().verdict.c_str());
  ImGui::PopTextWrapPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // Heatmaps in the top 60%, curves below.
  const float split = std::floor(height * 0.6f);
  const OverviewLayout o = layout_overview(base, width, split, ImGui::GetCursorScreenPos().y + 4, true);
  for (const auto& p : o.panels) {
    const CompareGrid* g = nullptr;
    for (const auto& c : app.compare_cells)
      if (c.step == app.step() && c.mode == p.mode) g = &c;
    if (!g) continue;
    const int labelled =
        draw_heatmap_frame(dl, p.map, base,
                           fmt::format("{}: current / baseline  |  {} >2x worse, {} >2x better",
                                       mode_name(p.mode), g->worse, g->better),
                           std::nullopt);
    app.shown.push_back(fmt::format("compare {} rows: {} of {} labelled, cells {}", mode_name(p.mode),
                                    labelled, p.map.n_rows, rect_str(p.map.cells)));
    draw_cells(dl, p.map, g->fill, nullptr, std::nullopt);
    if (const auto hit = heatmap_input(p.map, fmt::format("cmp{}", int(p.mode)).c_str())) {
      const std::size_t i = std::size_t(hit->row) * base.layers().size() + std::size_t(hit->col);
      const std::string& stage = base.stages()[std::size_t(hit->row)];
      const int layer = base.layers()[std::size_t(hit->col)];
      const Cell* a = base.cell(app.step(), p.mode, layer, stage);
      const Cell* b = cur.cell(app.step(), p.mode, layer, stage);
      ImGui::BeginTooltip();
      ImGui::Text("%s  layer %d  %s", stage.c_str(), layer, std::string(mode_name(p.mode)).c_str());
      ImGui::Text("baseline error/tol %.6g   current %.6g   ratio %.4g", a ? a->score : NAN,
                  b ? b->score : NAN, g->ratio[i]);
      ImGui::EndTooltip();
    }
  }
  // Legend for the ratio colours.
  const Rect lg = o.legend;
  dl->AddText({lg.x0, lg.y0 + 6}, kText, "current /");
  dl->AddText({lg.x0, lg.y0 + 22}, kText, "baseline");
  const float y0 = lg.y0 + 46, y1 = std::min(lg.y1 - 10, y0 + 200);
  for (int i = 0; i < 48; ++i) {
    const double r = std::pow(2.0, 3 - 6.0 * (i + 0.5) / 48);
    dl->AddRectFilled({lg.x0 + 6, y0 + (y1 - y0) * i / 48.f}, {lg.x0 + 24, y0 + (y1 - y0) * (i + 1) / 48.f},
                      im(change_colour(r)));
  }
  dl->AddText({lg.x0 + 30, y0 - 6}, kText, ">=8x worse");
  dl->AddText({lg.x0 + 30, (y0 + y1) / 2 - 7}, kText, "same");
  dl->AddText({lg.x0 + 30, y1 - 8}, kText, "<=8x better");

  std::vector<std::string> stages(app.state.drift_stages.begin(), app.state.drift_stages.end());
  std::vector<Mode> modes;
  if (app.state.show_isolated) modes.push_back(Mode::isolated);
  if (app.state.show_chained) modes.push_back(Mode::chained);
  const Metric metric = app.state.metric;
  const auto sb = drift_series(base, app.step(), stages, metric, modes);
  const auto sc = drift_series(cur, app.step(), stages, metric, modes);
  std::vector<DriftSeries> all = sb;
  all.insert(all.end(), sc.begin(), sc.end());
  std::vector<LegendEntry> legend;
  for (const auto& s : sc)
    legend.push_back({fmt::format("{} ({})", s.stage, mode_name(s.mode)),
                      series_colour(int(std::find(stages.begin(), stages.end(), s.stage) - stages.begin())),
                      s.mode == Mode::chained});
  const double x0 = base.layers().front() - 0.3, x1 = base.layers().back() + 0.3;
  const LogPlot plot = draw_log_plot(
      dl,
      {kMargin, o.panels.empty() ? split : std::max(split, o.panels.back().map.frame.y1 + kMargin),
       width - kMargin, height - kMargin},
      x0, x1, drift_scale(all),
      fmt::format(
          "{} across layers: baseline (thin, faded) vs current (solid); stages and metric from the Drift tab",
          metric_name(metric)),
      "layer", [](double x) { return x < 0 ? std::string("model") : fmt::format("{}", int(x)); },
      legend_width(legend));
  dl->PushClipRect(tl(plot.inner), br(plot.inner), true);
  CurveHover hb, hc;
  draw_curves(dl, plot, sb, stages, true, &hb);
  draw_curves(dl, plot, sc, stages, false, &hc);
  dl->PopClipRect();
  if (!legend.empty())
    app.shown.push_back(fmt::format("compare plot: {} legend: {}", rect_str(plot.inner),
                                    rect_str(draw_legend(dl, plot, legend))));
  if (hc.point && hc.dist <= hb.dist)
    point_tooltip(cur, *hc.series, *hc.point, metric, "current");
  else if (hb.point)
    point_tooltip(base, *hb.series, *hb.point, metric, "baseline");
}

}  // namespace ds::view
