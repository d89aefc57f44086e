// Overview: run metadata and one layer x stage heatmap per mode, failing cells outlined (red where
// they fail on their own, blue where they inherit an earlier stage's error) and NaN cells hatched. Colours
// come precomputed from the view-model; this only draws rects.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "app.h"
#include "drift_marks.h"
#include "draw_util.h"

namespace ds::view {

namespace {

std::string layer_label(int layer) { return layer < 0 ? "M" : fmt::format("{}", layer); }

void draw_colour_legend(ImDrawList* dl, const Rect& r) {
  dl->AddText({r.x0, r.y0 + 6}, kText, "max |diff| /");
  dl->AddText({r.x0, r.y0 + 22}, kText, "tolerance");
  const float x0 = r.x0 + 6, y0 = r.y0 + 46, y1 = std::min(r.y1 - 150, y0 + 330);
  draw_error_scale(dl, {x0, y0, x0 + 18, y1});
  float y = y1 + 16;
  auto swatch = [&](const char* label, auto&& paint) {
    const Rect sw{x0, y, x0 + 18, y + 14};
    paint(sw);
    dl->AddText({sw.x1 + 7, y}, kText, label);
    y += 22;
  };
  auto failure_swatch = [&](FailureKind kind, Rgba fill) {
    return [&, kind, fill](const Rect& sw) {
      dl->AddRectFilled(tl(sw), br(sw), im(fill));
      const FailureStyle st = failure_style(kind, sw.w(), sw.h());
      dl->AddRect(tl(sw), br(sw), im(st.border), 0, 0, st.border_px);
      if (st.corner_flag)
        dl->AddTriangleFilled({sw.x1 - 6, sw.y0}, {sw.x1, sw.y0}, {sw.x1, sw.y0 + 6}, im(st.border));
    };
  };
  swatch("fails here", failure_swatch(FailureKind::local, error_colour(10)));
  swatch("inherited", failure_swatch(FailureKind::inherited, inherited_fill(error_colour(10))));
  swatch("NaN / Inf", [&](const Rect& sw) {
    dl->AddRectFilled(tl(sw), br(sw), im(kNanColour));
    hatch(dl, sw, IM_COL32(0, 0, 0, 255));
  });
  swatch("no stage", [&](const Rect& sw) { dl->AddRectFilled(tl(sw), br(sw), im(kEmptyColour)); });
  swatch("skipped", [&](const Rect& sw) { dl->AddRectFilled(tl(sw), br(sw), im(kSkippedColour)); });
  swatch("filled", [&](const Rect& sw) { dl->AddRectFilled(tl(sw), br(sw), im(kFilledColour)); });
}

// Row labels shrink with the rows down to this size. Rows thinner than that get a label every
// k-th row, each with a tick into its own row, so no label can be read as a neighbour's.
constexpr float kMinLabelSize = 7;

// Under the chained panel's title, one bar per layer on the trend's own scale (a compounding drift
// that still passes brightens left to right although every cell is green), and the badge that
// opens the Drift tab.
void draw_drift_marks(App& app, ImDrawList* dl, const HeatmapLayout& l, const DriftMarks& marks) {
  if (marks.trend.empty()) return;
  const TraceModel& m = *app.model;
  const float y0 = l.title.y1 - 5, y1 = l.title.y1 - 1;
  for (const auto& t : marks.trend) {
    const int c = m.layer_index(t.layer);
    if (c < 0) continue;
    const Rect cr = l.cell_rect(0, c);
    dl->AddRectFilled({cr.x0, y0}, {cr.x1 - 1, y1}, im(t.colour));
  }
  app.shown.push_back(fmt::format("trend strip: {} layer(s), growth {:.3g}x, compounding {}",
                                  marks.trend.size(), marks.growth, marks.compounding ? "yes" : "no"));
  if (!marks.compounding) return;
  const ImVec2 size = ImGui::CalcTextSize(marks.badge.c_str());
  const float pad = 6;
  ImGui::SetCursorScreenPos({l.title.x1 - size.x - 2 * pad, l.title.y0 - 2});
  ImGui::PushStyleColor(ImGuiCol_Button, im(Rgba{120, 80, 10, 255}));
  ImGui::PushStyleColor(ImGuiCol_ButtonHovered, im(Rgba{170, 115, 20, 255}));
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, {pad, 1});
  if (ImGui::Button(marks.badge.c_str())) app.pending_tab = Tab::drift;
  const ImVec2 b0 = ImGui::GetItemRectMin(), b1 = ImGui::GetItemRectMax();
  ImGui::PopStyleVar();
  ImGui::PopStyleColor(2);
  app.shown.push_back(fmt::format("drift badge at {}: {}", rect_str({b0.x, b0.y, b1.x, b1.y}), marks.badge));
}

}  // namespace

int draw_heatmap_frame(ImDrawList* dl, const HeatmapLayout& l, const TraceModel& m, const std::string& title,
                       std::optional<int> marker_layer) {
  // Clipped to its panel: side by side (compare), a long title would run into the next one.
  dl->PushClipRect(tl(l.title), br(l.title), true);
  dl->AddText({l.title.x0, l.title.y0 + 3}, kText, title.c_str());
  dl->PopClipRect();
  // Every row labelled, centred on its row, in a font no taller than the row: a label skipped
  // for room would leave a red row reading as its neighbour's stage.
  const float size = std::clamp(l.cell_h, kMinLabelSize, ImGui::GetFontSize());
  const int every_row =
      l.cell_h >= kMinLabelSize ? 1 : int(std::ceil(kMinLabelSize / std::max(1.f, l.cell_h)));
  int labelled = 0;
  for (int r = 0; r < l.n_rows; r += every_row, ++labelled) {
    const Rect c = l.cell_rect(r, 0);
    const float y = (c.y0 + c.y1) / 2;
    text_right(dl, l.cells.x0 - 8, y, kText, m.stages()[std::size_t(r)], size);
    if (every_row > 1) dl->AddLine({l.cells.x0 - 6, y}, {l.cells.x0, y}, kText);
  }
  const int every_col = std::max(1, int(std::ceil(24.f / std::max(1.f, l.cell_w))));
  for (int c = 0; c < l.n_cols; c += every_col) {
    const Rect cr = l.cell_rect(0, c);
    text_centred(dl, (cr.x0 + cr.x1) / 2, l.cells.y1 + kColLabelHeight / 2, kDimText,
                 layer_label(m.layers()[std::size_t(c)]));
  }
  if (marker_layer) {
    const int c = m.layer_index(*marker_layer);
    if (c >= 0) {
      const Rect cr = l.cell_rect(0, c);
      dashed_vline(dl, cr.x0 - 1, l.cells.y0 - 4, l.cells.y1 + 2, kMarker, 2);
      // On the title line, but never over the title (a drift at layer 0 or 1 would sit on it).
      const float title_end = l.title.x0 + ImGui::CalcTextSize(title.c_str()).x + 12;
      dl->AddText({std::max(cr.x0 + 2, title_end), l.title.y0 + 3}, kMarker, "drift starts");
    }
  }
  return labelled;
}

void draw_cells(ImDrawList* dl, const HeatmapLayout& l, const std::vector<std::uint32_t>& fill,
                const Grid* flags, const std::optional<CellPos>& selected) {
  const float gap = l.cell_w >= 6 && l.cell_h >= 6 ? 1.f : 0.f;
  for (int r = 0; r < l.n_rows; ++r)
    for (int c = 0; c < l.n_cols; ++c) {
      const std::size_t i = std::size_t(r) * std::size_t(l.n_cols) + std::size_t(c);
      Rect cr = l.cell_rect(r, c);
      cr.x1 -= gap;
      cr.y1 -= gap;
      dl->AddRectFilled(tl(cr), br(cr), fill[i]);
      if (!flags) continue;
      const Cell& cell = flags->cells[i];
      if (cell.nan) hatch(dl, cr, IM_COL32(0, 0, 0, 255), std::max(3.f, l.cell_h / 3));
      const FailureKind kind = failure_kind(cell);
      if (kind == FailureKind::none) continue;
      // The fill keeps the error's colour (muted when inherited); the outline, its weight and the
      // corner flag say whether it failed here or only on what an earlier stage fed it.
      const FailureStyle st = failure_style(kind, cr.w(), cr.h());
      const float t = st.border_px;
      dl->AddRect({cr.x0 + t / 2, cr.y0 + t / 2}, {cr.x1 - t / 2, cr.y1 - t / 2}, im(st.border), 0, 0, t);
      // A dark line inside the outline so it still reads on a red fill.
      if (cr.w() > 4 * t && cr.h() > 4 * t)
        dl->AddRect({cr.x0 + t + 0.5f, cr.y0 + t + 0.5f}, {cr.x1 - t - 0.5f, cr.y1 - t - 0.5f},
                    IM_COL32(0, 0, 0, 200));
      if (st.corner_flag) {
        const float f = std::min(cr.w(), cr.h()) / 3;
        dl->AddTriangleFilled({cr.x1 - f, cr.y0}, {cr.x1, cr.y0}, {cr.x1, cr.y0 + f}, im(st.border));
      }
    }
  if (selected) {
    const Rect cr = l.cell_rect(selected->row, selected->col);
    dl->AddRect({cr.x0 - 2, cr.y0 - 2}, {cr.x1 + 1, cr.y1 + 1}, IM_COL32(255, 255, 255, 255), 0, 0, 2);
  }
}

std::optional<CellPos> heatmap_input(const HeatmapLayout& l, const char* id) {
  ImGui::SetCursorScreenPos(tl(l.cells));
  ImGui::InvisibleButton(id, {std::max(1.f, l.cells.w()), std::max(1.f, l.cells.h())});
  if (!ImGui::IsItemHovered()) return std::nullopt;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  return l.cell_at(mp.x, mp.y);
}

void cell_tooltip(const TraceModel& m, const trace::TraceRow& row, double score) {
  const StageResult& r = row.result;
  ImGui::BeginTooltip();
  ImGui::Text("%s  layer %s  step %d  %s", r.key.stage.c_str(), layer_label(r.key.layer).c_str(), r.key.step,
              std::string(mode_name(r.mode)).c_str());
  ImGui::Text("status %s   shape %s", std::string(status_name(r.status)).c_str(), shape_str(r.shape).c_str());
  ImGui::Text("max |diff| %.6g   mean %.6g   max ULP %.6g", r.m.max_abs, r.m.mean_abs, r.m.max_ulp);
  ImGui::Text("error / tolerance %.4g   (atol %.3g, rtol %.3g)", score, r.m.atol, r.m.rtol);
  ImGui::Text("mismatches %lld of %lld   cosine %.10f", (long long)r.m.mismatches, (long long)r.m.numel,
              r.m.cosine);
  if (r.m.nan_ref || r.m.nan_cand)
    ImGui::Text("NaN ref %lld, cand %lld", (long long)r.m.nan_ref, (long long)r.m.nan_cand);
  if (!r.note.empty()) ImGui::TextColored({1, 0.7f, 0.3f, 1}, "%s", r.note.c_str());
  ImGui::TextColored({0.6f, 0.6f, 0.65f, 1}, "click to inspect tensors");
  (void)m;
  ImGui::EndTooltip();
}

void draw_overview(App& app, float width, float height) {
  const TraceModel& m = *app.model;
  draw_run_info(app, m, "trace");
  step_slider(app, "overview", 320);
  seq_picker(app, "overview", 240);
  const OverviewLayout o = layout_overview(m, width, height, ImGui::GetCursorScreenPos().y + 4);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (const auto& p : o.panels) {
    const Grid* g = m.grid(app.step(), p.mode);
    if (!g) continue;
    const std::string title = fmt::format(
        "{} mode  |  step {}{}  |  {} failing ({} inherited), {} NaN of {} stages", mode_name(p.mode),
        app.step(), m.seqs().size() > 1 ? fmt::format("  |  sequence {}", m.seq()) : std::string(), g->n_fail,
        g->n_inherited, g->n_nan,
        m.rows().size() / std::max<std::size_t>(1, m.modes().size() * m.steps().size() * m.seqs().size()));
    const int labelled = draw_heatmap_frame(dl, p.map, m, title, m.info().drift_start_layer);
    app.shown.push_back(fmt::format("overview {} rows: {} of {} labelled, cells {}", mode_name(p.mode),
                                    labelled, p.map.n_rows, rect_str(p.map.cells)));
    std::vector<std::uint32_t> fill(g->cells.size());
    for (std::size_t i = 0; i < fill.size(); ++i) fill[i] = g->cells[i].fill;
    std::optional<CellPos> sel;
    if (app.state.selected && app.state.selected->mode == p.mode && app.state.selected->step == app.step()) {
      const int r = m.stage_index(app.state.selected->stage), c = m.layer_index(app.state.selected->layer);
      if (r >= 0 && c >= 0) sel = CellPos{r, c};
    }
    draw_cells(dl, p.map, fill, g, sel);
    if (p.mode == Mode::chained) draw_drift_marks(app, dl, p.map, drift_marks(m, app.step()));
    if (const auto hit = heatmap_input(p.map, mode_name(p.mode).data())) {
      const Cell& cell = g->cells[std::size_t(hit->row) * m.layers().size() + std::size_t(hit->col)];
      if (cell.row >= 0) {
        cell_tooltip(m, m.rows()[std::size_t(cell.row)], cell.score);
        if (ImGui::IsItemClicked())
          app.select(
              {app.step(), m.layers()[std::size_t(hit->col)], m.stages()[std::size_t(hit->row)], p.mode});
      }
    }
  }
  draw_colour_legend(dl, o.legend);
}

}  // namespace ds::view
