#include "draw_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ds::view {

void hatch(ImDrawList* dl, const Rect& r, ImU32 col, float spacing) {
  dl->PushClipRect(tl(r), br(r), true);
  for (float d = -r.h(); d < r.w(); d += spacing)
    dl->AddLine({r.x0 + d, r.y1}, {r.x0 + d + r.h(), r.y0}, col, 1.5f);
  dl->PopClipRect();
}

void dashed_vline(ImDrawList* dl, float x, float y0, float y1, ImU32 col, float thickness) {
  for (float y = y0; y < y1; y += 10) dl->AddLine({x, y}, {x, std::min(y + 6, y1)}, col, thickness);
}

void text_right(ImDrawList* dl, float x1, float y, ImU32 col, const std::string& s) {
  const ImVec2 sz = ImGui::CalcTextSize(s.c_str());
  dl->AddText({x1 - sz.x, y - sz.y / 2}, col, s.c_str());
}

void text_centred(ImDrawList* dl, float x, float y, ImU32 col, const std::string& s) {
  const ImVec2 sz = ImGui::CalcTextSize(s.c_str());
  dl->AddText({x - sz.x / 2, y - sz.y / 2}, col, s.c_str());
}

ImU32 series_colour(int i) {
  static constexpr ImU32 kPalette[] = {IM_COL32(90, 170, 255, 255),  IM_COL32(255, 140, 60, 255),
                                       IM_COL32(110, 210, 110, 255), IM_COL32(230, 90, 200, 255),
                                       IM_COL32(240, 220, 80, 255),  IM_COL32(120, 220, 230, 255),
                                       IM_COL32(200, 160, 255, 255), IM_COL32(255, 110, 110, 255)};
  return kPalette[std::size_t(i) % std::size(kPalette)];
}

ImVec2 LogPlot::at(double x, double v) const {
  const double u = x1 > x0 ? (x - x0) / (x1 - x0) : 0.5;
  return {inner.x0 + float(u) * inner.w(), inner.y1 - float(y.to_unit(v)) * inner.h()};
}

double LogPlot::x_at(float px) const { return x0 + (px - inner.x0) / inner.w() * (x1 - x0); }

LogPlot draw_log_plot(ImDrawList* dl, Rect frame, double x0, double x1, LogScale y, const std::string& title,
                      const std::string& x_title, const std::function<std::string(double)>& x_label) {
  LogPlot p{frame, {frame.x0 + 70, frame.y0 + 24, frame.x1 - 12, frame.y1 - 40}, x0, x1, y};
  dl->AddRectFilled(tl(frame), br(frame), IM_COL32(24, 24, 30, 255), 4);
  dl->AddText({frame.x0 + 8, frame.y0 + 4}, kText, title.c_str());
  for (const Tick& t : log_ticks(y)) {
    const float py = p.inner.y1 - float(t.unit) * p.inner.h();
    dl->AddLine({p.inner.x0, py}, {p.inner.x1, py}, t.major ? kGrid : IM_COL32(45, 45, 52, 255));
    dl->AddLine({p.inner.x0 - (t.major ? 6.f : 3.f), py}, {p.inner.x0, py}, kAxis);
    if (!t.label.empty()) text_right(dl, p.inner.x0 - 9, py, kText, t.label);
  }
  // Integer x ticks (layers), thinned to what fits.
  const double span = std::max(1.0, x1 - x0);
  const int every = std::max(1, int(std::ceil(span * 28 / std::max(1.f, p.inner.w()))));
  for (int xi = int(std::ceil(x0)); xi <= int(std::floor(x1)); ++xi) {
    if ((xi - int(std::ceil(x0))) % every) continue;
    const float px = p.at(xi, y.lo).x;
    dl->AddLine({px, p.inner.y1}, {px, p.inner.y1 + 5}, kAxis);
    text_centred(dl, px, p.inner.y1 + 14, kText, x_label(xi));
  }
  dl->AddRect(tl(p.inner), br(p.inner), kAxis);
  text_centred(dl, (p.inner.x0 + p.inner.x1) / 2, frame.y1 - 10, kDimText, x_title);
  return p;
}

void draw_legend(ImDrawList* dl, const Rect& inner, const std::vector<LegendEntry>& entries) {
  float w = 0;
  for (const auto& e : entries) w = std::max(w, ImGui::CalcTextSize(e.label.c_str()).x);
  const float lh = 17, bw = w + 46, bh = lh * float(entries.size()) + 8;
  const Rect box{inner.x1 - bw - 8, inner.y0 + 8, inner.x1 - 8, inner.y0 + 8 + bh};
  dl->AddRectFilled(tl(box), br(box), IM_COL32(16, 16, 20, 225), 3);
  dl->AddRect(tl(box), br(box), kGrid, 3);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const float y = box.y0 + 4 + lh * (float(i) + 0.5f);
    dl->AddLine({box.x0 + 6, y}, {box.x0 + 34, y}, entries[i].colour, entries[i].thick ? 3.5f : 1.5f);
    dl->AddText({box.x0 + 40, y - 7}, kText, entries[i].label.c_str());
  }
}

void draw_bars(ImDrawList* dl, Rect frame, const std::string& title, const std::vector<std::string>& labels,
               const std::vector<double>& values, ImU32 colour) {
  dl->AddRectFilled(tl(frame), br(frame), IM_COL32(24, 24, 30, 255), 4);
  dl->AddText({frame.x0 + 8, frame.y0 + 4}, kText, title.c_str());
  if (values.empty()) return;
  const double top = std::max(1.0, *std::max_element(values.begin(), values.end()));
  const float label_w = 78, y0 = frame.y0 + 24,
              row_h = std::min(18.f, (frame.y1 - y0 - 4) / float(values.size()));
  const float x0 = frame.x0 + label_w, x1 = frame.x1 - 60;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float y = y0 + row_h * float(i);
    text_right(dl, x0 - 6, y + row_h / 2, kDimText, labels[i]);
    // log(1 + count) so a single outlier element is still a visible bar next to thousands.
    const float u = float(std::log1p(values[i]) / std::log1p(top));
    if (values[i] > 0)
      dl->AddRectFilled({x0, y + 2}, {x0 + std::max(2.f, u * (x1 - x0)), y + row_h - 2}, colour);
    dl->AddText({x0 + u * (x1 - x0) + 4, y + row_h / 2 - 7}, kText, fmt::format("{:g}", values[i]).c_str());
  }
}

}  // namespace ds::view
