// Drawing helpers shared by the panels: colours, hatching, text placement and a log-y plot
// frame with axes, ticks and a legend, all on ImGui draw lists.
#pragma once

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

#include "colour_map.h"
#include "heatmap_layout.h"
#include "log_scale.h"

namespace ds::view {

inline ImU32 im(Rgba c) { return c.packed(); }
inline ImVec2 tl(const Rect& r) { return {r.x0, r.y0}; }
inline ImVec2 br(const Rect& r) { return {r.x1, r.y1}; }

inline constexpr ImU32 kText = IM_COL32(225, 225, 230, 255);
inline constexpr ImU32 kDimText = IM_COL32(150, 150, 160, 255);
inline constexpr ImU32 kAxis = IM_COL32(160, 160, 170, 255);
inline constexpr ImU32 kGrid = IM_COL32(70, 70, 80, 255);
inline constexpr ImU32 kMarker = IM_COL32(255, 220, 60, 255);

void hatch(ImDrawList* dl, const Rect& r, ImU32 col, float spacing = 4);
void dashed_vline(ImDrawList* dl, float x, float y0, float y1, ImU32 col, float thickness = 2);
// Text right-aligned at x1 and vertically centred on y; `size` scales the font (0: its own size),
// so a label can be made to fit its heatmap row.
void text_right(ImDrawList* dl, float x1, float y, ImU32 col, const std::string& s, float size = 0);
void text_centred(ImDrawList* dl, float x, float y, ImU32 col, const std::string& s);
// A distinct colour per series index.
ImU32 series_colour(int i);

// A plot with linear x and log y. Draws the frame, grid, ticks and axis titles; maps data to pixels.
struct LogPlot {
  Rect frame, inner;
  double x0 = 0, x1 = 1;
  LogScale y;
  ImVec2 at(double x, double v) const;
  double x_at(float px) const;
};
// `right` pixels at the frame's right edge are left outside the plot (for its legend).
LogPlot draw_log_plot(ImDrawList* dl, Rect frame, double x0, double x1, LogScale y, const std::string& title,
                      const std::string& x_title, const std::function<std::string(double)>& x_label,
                      float right = 0);

struct LegendEntry {
  std::string label;
  ImU32 colour;
  bool thick = false;  // chained curves are drawn thick
};
// The width a legend of `entries` takes: reserve it right of a plot, so it never covers a curve.
float legend_width(const std::vector<LegendEntry>& entries);
// Draws the legend box at the top right of `plot`'s frame, right of its inner rect; returns the box.
Rect draw_legend(ImDrawList* dl, const LogPlot& plot, const std::vector<LegendEntry>& entries);
// The heatmap's colour scale (error / tolerance, error_colour's decades) as a vertical bar in
// `bar`, decade labels right of it.
void draw_error_scale(ImDrawList* dl, const Rect& bar);
// "x0,y0,x1,y1" in whole pixels, for --print-state lines.
std::string rect_str(const Rect& r);
// A horizontal bar chart of counts (histograms): one labelled bar per bin, log-scaled counts.
void draw_bars(ImDrawList* dl, Rect frame, const std::string& title, const std::vector<std::string>& labels,
               const std::vector<double>& values, ImU32 colour);

}  // namespace ds::view
