#include "draw_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
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

void text_right(ImDrawList* dl, float x1, float y, ImU32 col, const std::string& s, float size) {
  ImFont* font = ImGui::GetFont();
  if (size <= 0) size = ImGui::GetFontSize();
  const ImVec2 sz = font->CalcTextSizeA(size, FLT_MAX, 0, s.c_str());
  dl->AddText(font, size, {x1 - sz.x, y - sz.y / 2}, col, s.c_str());
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
                      const std::string& x_title, const std::function<std::string(double)>& x_label,
                      float right) {
  LogPlot p{frame, {frame.x0 + 70, frame.y0 + 24, frame.x1 - 12 - right, frame.y1 - 40}, x0, x1, y};
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

namespace {
constexpr float kLegendLine = 17, kLegendSwatch = 46;
}  // namespace

float legend_width(const std::vector<LegendEntry>& entries) {
  float w = 0;
  for (const auto& e : entries) w = std::max(w, ImGui::CalcTextSize(e.label.c_str()).x);
  return entries.empty() ? 0 : w + kLegendSwatch + 8;
}

Rect draw_legend(ImDrawList* dl, const LogPlot& plot, const std::vector<LegendEntry>& entries) {
  const float bh = kLegendLine * float(entries.size()) + 8;
  const Rect box{plot.inner.x1 + 8, plot.inner.y0, plot.inner.x1 + 8 + legend_width(entries) - 8,
                 plot.inner.y0 + bh};
  dl->AddRectFilled(tl(box), br(box), IM_COL32(16, 16, 20, 255), 3);
  dl->AddRect(tl(box), br(box), kGrid, 3);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const float y = box.y0 + 4 + kLegendLine * (float(i) + 0.5f);
    dl->AddLine({box.x0 + 6, y}, {box.x0 + 34, y}, entries[i].colour, entries[i].thick ? 3.5f : 1.5f);
    dl->AddText({box.x0 + 40, y - 7}, kText, entries[i].label.c_str());
  }
  return box;
}

void draw_error_scale(ImDrawList* dl, const Rect& bar) {
  const LogScale s{std::pow(10.0, -kPassDecades), std::pow(10.0, kFailDecades)};
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    const double v0 = s.from_unit(double(i) / steps), v1 = s.from_unit(double(i + 1) / steps);
    const float ya = bar.y1 - float(i + 1) / steps * bar.h(), yb = bar.y1 - float(i) / steps * bar.h();
    dl->AddRectFilled({bar.x0, ya}, {bar.x1, yb}, im(error_colour(std::sqrt(v0 * v1))));
  }
  for (const Tick& t : log_ticks(s)) {
    if (!t.major || t.label.empty()) continue;
    const float y = bar.y1 - float(t.unit) * bar.h();
    dl->AddLine({bar.x1, y}, {bar.x1 + 4, y}, kAxis);
    dl->AddText({bar.x1 + 7, y - 7}, t.value == 1 ? kMarker : kText,
                (t.value == 1 ? "1 (tol)" : t.label).c_str());
  }
}

std::string rect_str(const Rect& r) {
  return fmt::format("{},{},{},{}", std::lround(r.x0), std::lround(r.y0), std::lround(r.x1),
                     std::lround(r.y1));
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
