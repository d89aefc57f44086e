#include "heatmap_layout.h"

#include <algorithm>
#include <cmath>

#include "trace_model.h"

namespace ds::view {

Rect HeatmapLayout::cell_rect(int row, int col) const {
  const float x = cells.x0 + float(col) * cell_w, y = cells.y0 + float(row) * cell_h;
  return {x, y, x + cell_w, y + cell_h};
}

std::optional<CellPos> HeatmapLayout::cell_at(float x, float y) const {
  if (!cells.contains(x, y) || cell_w <= 0 || cell_h <= 0) return std::nullopt;
  const int col = std::min(n_cols - 1, int((x - cells.x0) / cell_w));
  const int row = std::min(n_rows - 1, int((y - cells.y0) / cell_h));
  return CellPos{row, col};
}

HeatmapLayout layout_heatmap(Rect frame, int n_rows, int n_cols) {
  HeatmapLayout l;
  l.frame = frame;
  l.n_rows = n_rows;
  l.n_cols = n_cols;
  l.title = {frame.x0, frame.y0, frame.x1, frame.y0 + kTitleHeight};
  const float avail_w = std::max(0.0f, frame.w() - kRowLabelWidth);
  const float avail_h = std::max(0.0f, frame.h() - kTitleHeight - kColLabelHeight);
  // Whole pixels, so every cell is the same size on screen and the test can aim at one.
  l.cell_w = n_cols > 0 ? std::floor(avail_w / float(n_cols)) : 0;
  l.cell_h = n_rows > 0 ? std::floor(std::min(kMaxCellHeight, avail_h / float(n_rows))) : 0;
  const float x0 = frame.x0 + kRowLabelWidth, y0 = l.title.y1;
  l.cells = {x0, y0, x0 + l.cell_w * float(n_cols), y0 + l.cell_h * float(n_rows)};
  return l;
}

const HeatmapLayout* OverviewLayout::panel(Mode m) const {
  for (const auto& p : panels)
    if (p.mode == m) return &p.map;
  return nullptr;
}

OverviewLayout layout_overview(const TraceModel& model, float width, float height, float header,
                               bool side_by_side) {
  OverviewLayout o;
  header = std::max(header, kHeaderHeight);
  o.header = {0, 0, width, header};
  const float x0 = kMargin, x1 = width - kLegendWidth - kMargin;
  o.legend = {x1 + kMargin, header, width - kMargin, height - kMargin};
  const int n = std::max<int>(1, int(model.modes().size()));
  const float panel_h = side_by_side ? height - header - kMargin : (height - header - kMargin) / float(n);
  const float panel_w = side_by_side ? (x1 - x0 + kMargin) / float(n) : x1 - x0 + kMargin;
  for (int i = 0; i < int(model.modes().size()); ++i) {
    const float px = x0 + (side_by_side ? float(i) * panel_w : 0);
    const float py = header + (side_by_side ? 0 : float(i) * panel_h);
    const Rect frame{px, py, px + panel_w - kMargin, py + panel_h - kMargin};
    o.panels.push_back({model.modes()[std::size_t(i)],
                        layout_heatmap(frame, int(model.stages().size()), int(model.layers().size()))});
  }
  return o;
}

}  // namespace ds::view
