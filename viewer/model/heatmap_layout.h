// Where things go on screen, in pixels, decided without a window: the app draws at these rects
// and a click maps back to a cell through the same numbers (the screenshot test uses them too).
#pragma once

#include <optional>
#include <vector>

#include "result.h"

namespace ds::view {

class TraceModel;

struct Rect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float w() const { return x1 - x0; }
  float h() const { return y1 - y0; }
  bool contains(float x, float y) const { return x >= x0 && x < x1 && y >= y0 && y < y1; }
};

struct CellPos {
  int row = 0, col = 0;  // row: stage index, col: layer index
  bool operator==(const CellPos&) const = default;
};

struct HeatmapLayout {
  Rect frame;  // the whole panel: title, row labels, cells, column labels
  Rect title, cells;
  int n_rows = 0, n_cols = 0;
  float cell_w = 0, cell_h = 0;
  Rect cell_rect(int row, int col) const;
  std::optional<CellPos> cell_at(float x, float y) const;
};

inline constexpr float kRowLabelWidth = 96;  // fits "residual_2" and longer stage names
inline constexpr float kTitleHeight = 22;
inline constexpr float kColLabelHeight = 18;
inline constexpr float kMaxCellHeight = 28;

// Cells fill the frame minus the labels: a 2-layer trace gets wide cells rather than two thirds
// of the window left empty. Rows stop at kMaxCellHeight (taller ones only spread the labels).
HeatmapLayout layout_heatmap(Rect frame, int n_rows, int n_cols);

struct OverviewLayout {
  Rect header;  // tabs, run metadata, step selector
  Rect legend;  // colour scale, right of the panels
  struct Panel {
    Mode mode;
    HeatmapLayout map;
  };
  std::vector<Panel> panels;  // one per mode in the trace, stacked
  const HeatmapLayout* panel(Mode m) const;
};

// The header's least height; a narrow window wraps its lines and the app passes the height they
// took (never less than this, so a wide window's layout is known without drawing it).
inline constexpr float kHeaderHeight = 132;
inline constexpr float kLegendWidth = 120;
inline constexpr float kMargin = 10;

// Panels stacked, one per mode; `side_by_side` puts them in columns instead (the compare view,
// whose heatmaps share the window with its curves and would otherwise get rows too thin to label).
OverviewLayout layout_overview(const TraceModel& model, float width, float height,
                               float header = kHeaderHeight, bool side_by_side = false);

}  // namespace ds::view
