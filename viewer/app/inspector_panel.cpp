// Tensor inspector: reference and candidate side by side around the first mismatch (or a typed
// coordinate), a zoomable |diff| heatmap of the 2-D view, error and ULP histograms and per-token
// error. Tensors are read here, once per selected stage.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "app.h"
#include "draw_util.h"
#include "launch_view.h"

namespace ds::view {

namespace {

constexpr const char* kUlpLabels[kUlpBuckets] = {"0",      "1",         "2-3",     "4-15",
                                                 "16-255", "256-65535", ">=65536", "NaN/Inf"};

void values_table(const Inspection& in, std::int64_t focus) {
  const std::int64_t row = focus / in.cols, col = focus % in.cols;
  const std::int64_t c0 = std::max<std::int64_t>(0, col - 8), c1 = std::min(in.cols, col + 9);
  if (ImGui::BeginTable("values", 5,
                        ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* h : {"index", "reference", "candidate", "|diff|", "diff / tol"})
      ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::size_t i = std::size_t(row * in.cols + c);
      const float r = in.ratio[i];
      const ImVec4 colour =
          std::isnan(r) || r > 1 ? ImVec4{1, 0.4f, 0.35f, 1} : ImVec4{0.85f, 0.85f, 0.88f, 1};
      ImGui::TableNextRow();
      if (std::int64_t(i) == focus)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(80, 70, 20, 255));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(coordinate_str(std::int64_t(i), in.shape).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.9g", in.ref[i]);
      ImGui::TableNextColumn();
      ImGui::Text("%.9g", in.cand[i]);
      ImGui::TableNextColumn();
      ImGui::TextColored(colour, "%.3g", std::fabs(in.cand[i] - in.ref[i]));
      ImGui::TableNextColumn();
      ImGui::TextColored(colour, "%.3g", double(r));
    }
    ImGui::EndTable();
  }
}

}  // namespace

void draw_inspector(App& app, float width, float height) {
  if (!app.state.selected) {
    ImGui::TextUnformatted(
        "Click a heatmap cell (Overview) or a curve point (Drift) to inspect its tensors.");
    return;
  }
  const TraceModel& m = *app.model;
  const InspectTarget& t = *app.state.selected;
  if (!app.inspection || !(app.inspection->target == t))
    app.inspection = inspect(m, t), app.diff_dirty = true;
  const Inspection& in = *app.inspection;
  ImGui::Text("%s   layer %s   step %d   %s mode", t.stage.c_str(),
              t.layer < 0 ? "model" : std::to_string(t.layer).c_str(), t.step,
              std::string(mode_name(t.mode)).c_str());
  if (in.row < 0 || !in.loaded()) {
    ImGui::TextColored({1, 0.4f, 0.35f, 1}, "%s", in.error.c_str());
    return;
  }
  const StageResult& r = m.rows()[std::size_t(in.row)].result;
  ImGui::Text(
      "status %s   shape %s   max |diff| %.6g at %s   mismatches %lld of %lld   cosine %.10f   max ULP %.6g",
      std::string(status_name(r.status)).c_str(), shape_str(r.shape).c_str(), r.m.max_abs,
      coordinate_str(r.m.max_abs_index, r.shape).c_str(), (long long)r.m.mismatches, (long long)r.m.numel,
      r.m.cosine, r.m.max_ulp);
  // The kernels behind the stage: which launch produced it, with what grid and how long it took.
  app.shown_launches.clear();
  if (m.launches())
    for (const StepLaunch& l : launches_behind(*m.launches(), t)) {
      ImGui::TextColored({0.55f, 0.75f, 1, 1}, "launch %s: %s", l.kernel_step.c_str(),
                         launch_line(l.launch).c_str());
      app.shown_launches.push_back(l.launch.kernel);
    }
  const std::int64_t focus = app.state.focus.value_or(in.focus);
  ImGui::Text("showing %s (%s)", coordinate_str(focus, in.shape).c_str(),
              app.state.focus ? "chosen" : (r.m.mismatches > 0 ? "first mismatch" : "largest difference"));
  ImGui::SameLine(0, 30);
  static char coord[64] = "";
  ImGui::SetNextItemWidth(160);
  const bool go = ImGui::InputTextWithHint("##coord", "row,col or index", coord, sizeof coord,
                                           ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Go") || go) {
    if (const auto f = parse_coordinate(coord, in)) app.state.focus = *f;
  }
  ImGui::SameLine();
  if (ImGui::Button("First mismatch")) app.state.focus.reset();

  const float top = ImGui::GetCursorScreenPos().y + 4;
  ImGui::SetCursorScreenPos({8, top});
  ImGui::BeginChild("table", {470, height - top - 8});
  values_table(in, focus);
  ImGui::EndChild();

  // |diff| heatmap of the 2-D view, max-pooled into at most 128 x 128 bins; the wheel zooms.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float x0 = 490, right = width - 10, mid = top + (height - top) * 0.55f;
  // The colour scale sits right of the map (kScaleWidth: the bar and its decade labels).
  constexpr float kScaleWidth = 70;
  const Rect map{x0 + 60, top + 22, right - 10 - kScaleWidth, mid - 26};
  const Rect scale{map.x1 + 10, map.y0, map.x1 + 26, map.y1};
  draw_error_scale(dl, scale);
  app.shown.push_back(fmt::format("inspector map: {} scale: {}", rect_str(map), rect_str(scale)));
  dl->AddText(
      {x0, top + 2}, kText,
      fmt::format("|diff| / tolerance, {} x {} view (wheel: zoom, right click: reset)", in.rows, in.cols)
          .c_str());
  if (app.zoom_nr == 0) app.zoom_r0 = 0, app.zoom_c0 = 0, app.zoom_nr = in.rows, app.zoom_nc = in.cols;
  ImGui::SetCursorScreenPos(tl(map));
  ImGui::InvisibleButton("diffmap", {std::max(1.f, map.w()), std::max(1.f, map.h())});
  const ImVec2 mp = ImGui::GetIO().MousePos;
  auto elem_at = [&](float x, float y) {
    const std::int64_t c = app.zoom_c0 + std::int64_t((x - map.x0) / map.w() * float(app.zoom_nc));
    const std::int64_t rr = app.zoom_r0 + std::int64_t((y - map.y0) / map.h() * float(app.zoom_nr));
    return std::pair{std::clamp<std::int64_t>(rr, 0, in.rows - 1),
                     std::clamp<std::int64_t>(c, 0, in.cols - 1)};
  };
  if (ImGui::IsItemHovered()) {
    const auto [er, ec] = elem_at(mp.x, mp.y);
    const std::size_t i = std::size_t(er * in.cols + ec);
    ImGui::SetTooltip("[%lld, %lld]  ref %.9g  cand %.9g  diff/tol %.3g", (long long)er, (long long)ec,
                      in.ref[i], in.cand[i], double(in.ratio[i]));
    if (const float w = ImGui::GetIO().MouseWheel; w != 0) {
      const double f = w > 0 ? 0.5 : 2.0;
      const std::int64_t nr = std::clamp<std::int64_t>(std::int64_t(double(app.zoom_nr) * f), 1, in.rows);
      const std::int64_t nc = std::clamp<std::int64_t>(std::int64_t(double(app.zoom_nc) * f), 1, in.cols);
      app.zoom_r0 = std::clamp<std::int64_t>(er - nr / 2, 0, in.rows - nr);
      app.zoom_c0 = std::clamp<std::int64_t>(ec - nc / 2, 0, in.cols - nc);
      app.zoom_nr = nr, app.zoom_nc = nc, app.diff_dirty = true;
    }
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) app.zoom_nr = 0, app.diff_dirty = true;
    if (ImGui::IsItemClicked()) app.state.focus = std::int64_t(i);
  }
  if (app.diff_dirty && app.zoom_nr > 0) {
    app.diff = diff_image(in, app.zoom_r0, app.zoom_c0, app.zoom_nr, app.zoom_nc, 128);
    app.diff_dirty = false;
  }
  const DiffImage& img = app.diff;
  if (img.out_rows > 0) {
    const float bw = map.w() / float(img.out_cols), bh = map.h() / float(img.out_rows);
    for (int rr = 0; rr < img.out_rows; ++rr)
      for (int c = 0; c < img.out_cols; ++c)
        dl->AddRectFilled({map.x0 + bw * float(c), map.y0 + bh * float(rr)},
                          {map.x0 + bw * float(c + 1), map.y0 + bh * float(rr + 1)},
                          img.fill[std::size_t(rr) * std::size_t(img.out_cols) + std::size_t(c)]);
    text_right(dl, map.x0 - 6, map.y0 + 6, kDimText, fmt::format("row {}", img.r0));
    text_right(dl, map.x0 - 6, map.y1 - 6, kDimText, fmt::format("{}", img.r0 + img.nr - 1));
    dl->AddText({map.x0, map.y1 + 3}, kDimText, fmt::format("col {}", img.c0).c_str());
    text_right(dl, map.x1, map.y1 + 10, kDimText, fmt::format("{}", img.c0 + img.nc - 1));
    // Outline the focused element when it is in view.
    const std::int64_t fr = focus / in.cols, fc = focus % in.cols;
    if (fr >= img.r0 && fr < img.r0 + img.nr && fc >= img.c0 && fc < img.c0 + img.nc) {
      const float fx = map.x0 + float(fc - img.c0) / float(img.nc) * map.w();
      const float fy = map.y0 + float(fr - img.r0) / float(img.nr) * map.h();
      dl->AddRect(
          {fx - 2, fy - 2},
          {fx + std::max(4.f, map.w() / float(img.nc)) + 2, fy + std::max(4.f, map.h() / float(img.nr)) + 2},
          IM_COL32(255, 255, 255, 255), 0, 0, 2);
    }
  }

  // Histograms and per-token error along the bottom.
  const float w3 = (right - x0) / 3;
  std::vector<std::string> el;
  std::vector<double> ev;
  for (int b = 0; b < kErrBins; ++b)
    el.push_back(err_bin_label(b)), ev.push_back(double(in.err_hist[std::size_t(b)]));
  draw_bars(dl, {x0, mid, x0 + w3 - 8, height - 10}, "|diff| histogram (elements)", el, ev,
            IM_COL32(90, 170, 255, 255));
  std::vector<std::string> ul(kUlpLabels, kUlpLabels + kUlpBuckets);
  std::vector<double> uv(r.m.ulp_hist.begin(), r.m.ulp_hist.end());
  draw_bars(dl, {x0 + w3, mid, x0 + 2 * w3 - 8, height - 10}, "ULP distance histogram (summary)", ul, uv,
            IM_COL32(255, 150, 60, 255));
  std::vector<std::string> tl_;
  for (std::size_t i = 0; i < in.per_token.size(); ++i) tl_.push_back(fmt::format("token {}", i));
  draw_bars(dl, {x0 + 2 * w3, mid, right, height - 10},
            in.per_token.empty() ? "per-token error: none stored" : "per-token relative error", tl_,
            in.per_token, IM_COL32(110, 210, 110, 255));
}

}  // namespace ds::view
