// Drift plot: a metric across layers for chosen stages, isolated vs chained, log y, with the
// noise floor (when the trace has floor metrics) and the drift-start marker.
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>
#include <limits>

#include "app.h"
#include "draw_util.h"

namespace ds::view {

namespace {

std::string layer_tick(double x) { return x < 0 ? "model" : fmt::format("{}", int(x)); }

}  // namespace

// Curves of `series` in `plot`; `faded` draws them thinner and translucent (compare baseline).
void draw_curves(ImDrawList* dl, const LogPlot& plot, const std::vector<DriftSeries>& series,
                 const std::vector<std::string>& stage_order, bool faded, CurveHover* hover) {
  const ImVec2 mp = ImGui::GetIO().MousePos;
  for (const auto& s : series) {
    const int si = int(std::find(stage_order.begin(), stage_order.end(), s.stage) - stage_order.begin());
    ImU32 col = series_colour(si);
    if (faded) col = (col & 0x00FFFFFF) | 0x70000000;
    const bool chained = s.mode == Mode::chained;
    const float thick = (chained ? 3.f : 1.5f) * (faded ? 0.7f : 1.f);
    for (std::size_t i = 1; i < s.points.size(); ++i)
      dl->AddLine(plot.at(s.points[i - 1].layer, s.points[i - 1].value),
                  plot.at(s.points[i].layer, s.points[i].value), col, thick);
    for (const auto& p : s.points) {
      const ImVec2 c = plot.at(p.layer, p.value);
      if (chained)
        dl->AddRectFilled({c.x - 3.5f, c.y - 3.5f}, {c.x + 3.5f, c.y + 3.5f}, col);
      else
        dl->AddCircleFilled(c, 3.5f, col);
      const float d = std::hypot(c.x - mp.x, c.y - mp.y);
      if (hover && d < hover->dist) *hover = {d, &s, &p};
    }
  }
}

void draw_floor(ImDrawList* dl, const LogPlot& plot, const std::vector<DriftSeries>& series) {
  for (const auto& s : series) {
    if (!s.has_floor) continue;
    // The band under the floor: differences there are within the reference's own noise.
    for (std::size_t i = 1; i < s.points.size(); ++i) {
      const auto &a = s.points[i - 1], &b = s.points[i];
      if (a.floor <= 0 || b.floor <= 0) continue;  // none recorded (or exact): nothing on a log axis
      const ImVec2 pa = plot.at(a.layer, a.floor), pb = plot.at(b.layer, b.floor);
      dl->AddQuadFilled(pa, pb, {pb.x, plot.inner.y1}, {pa.x, plot.inner.y1}, IM_COL32(150, 150, 170, 40));
      dl->AddLine(pa, pb, IM_COL32(170, 170, 190, 140), 1);
    }
  }
}

void point_tooltip(const TraceModel& m, const DriftSeries& s, const DriftPoint& p, Metric metric,
                   const char* which) {
  const StageResult& r = m.rows()[std::size_t(p.row)].result;
  ImGui::BeginTooltip();
  if (which) ImGui::TextColored({0.6f, 0.6f, 0.65f, 1}, "%s", which);
  ImGui::Text("%s  layer %s  %s", s.stage.c_str(), layer_tick(p.layer).c_str(),
              std::string(mode_name(s.mode)).c_str());
  ImGui::Text("%s = %.9g", std::string(metric_name(metric)).c_str(), p.value);
  if (p.floor >= 0) ImGui::Text("noise floor = %.9g", p.floor);
  ImGui::Text("status %s   max |diff| %.6g   max ULP %.6g   cosine %.10f",
              std::string(status_name(r.status)).c_str(), r.m.max_abs, r.m.max_ulp, r.m.cosine);
  ImGui::EndTooltip();
}

void draw_drift(App& app, float width, float height) {
  const TraceModel& m = *app.model;
  ViewState& st = app.state;
  const float top = ImGui::GetCursorScreenPos().y;
  ImGui::BeginChild("drift_controls", {230, height - top - 8}, true);
  ImGui::TextUnformatted("Metric");
  for (Metric mt : kMetrics)
    if (ImGui::RadioButton(std::string(metric_name(mt)).c_str(), st.metric == mt)) st.metric = mt;
  ImGui::Separator();
  ImGui::Checkbox("isolated", &st.show_isolated);
  ImGui::SameLine();
  ImGui::Checkbox("chained", &st.show_chained);
  step_slider(app, "drift", ImGui::GetContentRegionAvail().x);
  seq_picker(app, "drift", 240);
  ImGui::Separator();
  ImGui::TextUnformatted("Stages");
  int checked = 0;  // curves are coloured by their order among the chosen stages
  for (std::size_t i = 0; i < m.stages().size(); ++i) {
    const std::string& s = m.stages()[i];
    bool on = st.drift_stages.count(s) > 0;
    ImGui::PushStyleColor(ImGuiCol_CheckMark,
                          ImGui::ColorConvertU32ToFloat4(series_colour(on ? checked++ : 0)));
    if (ImGui::Checkbox(s.c_str(), &on))
      on ? (void)st.drift_stages.insert(s) : (void)st.drift_stages.erase(s);
    ImGui::PopStyleColor();
  }
  ImGui::EndChild();

  std::vector<std::string> stages;
  for (const auto& s : m.stages())
    if (st.drift_stages.count(s)) stages.push_back(s);
  std::vector<Mode> modes;
  if (st.show_isolated) modes.push_back(Mode::isolated);
  if (st.show_chained) modes.push_back(Mode::chained);
  const auto series = drift_series(m, app.step(), stages, st.metric, modes);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const Rect frame{250, top, width - 10, height - 10};
  const double x0 = m.layers().empty() ? 0 : m.layers().front() - 0.3,
               x1 = m.layers().empty() ? 1 : m.layers().back() + 0.3;
  const bool any_floor = std::any_of(series.begin(), series.end(), [](const auto& s) { return s.has_floor; });
  const std::string floor_note =
      any_floor ? "shaded: noise floor"
      : has_floor_metrics(m)
          ? "no noise floor for this metric: max |diff|, mean |diff| and the ratio have one"
      : series.empty() ? "no curves"
                       : "no noise-floor metrics in this trace";
  app.shown.push_back(fmt::format("drift floor: {}", floor_note));
  const std::string title =
      fmt::format("{} across layers, step {}  ({})", metric_name(st.metric), app.step(), floor_note);
  LogScale scale = drift_scale(series);
  if (st.metric == Metric::tol_ratio)
    scale = {std::min(scale.lo, 1e-3), std::max(scale.hi, 10.0)};  // show the tolerance
  std::vector<LegendEntry> legend;
  for (const auto& s : series)
    legend.push_back({fmt::format("{} ({})", s.stage, mode_name(s.mode)),
                      series_colour(int(std::find(stages.begin(), stages.end(), s.stage) - stages.begin())),
                      s.mode == Mode::chained});
  const LogPlot plot =
      draw_log_plot(dl, frame, x0, x1, scale, title, "layer", layer_tick, legend_width(legend));
  if (st.metric == Metric::tol_ratio) {
    const float y = plot.at(x0, 1).y;
    dl->AddLine({plot.inner.x0, y}, {plot.inner.x1, y}, IM_COL32(255, 90, 90, 160), 1.5f);
    dl->AddText({plot.inner.x0 + 4, y - 15}, IM_COL32(255, 120, 120, 255), "tolerance");
  }
  if (m.info().drift_start_layer) {
    const float x = plot.at(*m.info().drift_start_layer, 1).x;
    dashed_vline(dl, x, plot.inner.y0, plot.inner.y1, kMarker);
    dl->AddText({x + 4, plot.inner.y0 + 4}, kMarker, "drift starts");
  }
  dl->PushClipRect(tl(plot.inner), br(plot.inner), true);
  draw_floor(dl, plot, series);
  CurveHover hover;
  draw_curves(dl, plot, series, stages, false, &hover);
  dl->PopClipRect();
  if (!legend.empty())
    app.shown.push_back(fmt::format("drift plot: {} legend: {}", rect_str(plot.inner),
                                    rect_str(draw_legend(dl, plot, legend))));
  else
    dl->AddText({plot.inner.x0 + 20, plot.inner.y0 + 20}, kDimText, "choose stages and modes on the left");
  if (hover.point) {
    dl->AddCircle(plot.at(hover.point->layer, hover.point->value), 7, IM_COL32(255, 255, 255, 255), 0, 2);
    point_tooltip(m, *hover.series, *hover.point, st.metric, nullptr);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left))
      app.select({app.step(), hover.point->layer, hover.series->stage, hover.series->mode});
  }
}

}  // namespace ds::view
