// The viewer's state and its one entry point per frame. Panels live in their own files.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compare_model.h"
#include "inspector_model.h"
#include "trace_model.h"
#include "view_options.h"

struct ImDrawList;

namespace ds::view {

struct App {
  std::string path, compare_path;
  std::unique_ptr<TraceModel> model, compare;
  std::string error, compare_error;  // why a file did not open: shown instead of its panels
  std::vector<CompareGrid> compare_cells;
  ViewState state;
  std::optional<Tab> pending_tab;  // a tab to switch to on the next frame (clicks, --view)

  // The inspector's loaded stage, and its |diff| image window (recomputed on zoom, not per frame).
  std::optional<Inspection> inspection;
  DiffImage diff;
  std::int64_t zoom_r0 = 0, zoom_c0 = 0, zoom_nr = 0, zoom_nc = 0;
  bool diff_dirty = true;
  // The kernels the inspector lists for its stage (what --print-state reports as "launches:").
  std::vector<std::string> shown_launches;
  // "what: detail" lines of the last frame, printed by --print-state after the launches: where the
  // panels drew their labels, legends and controls, so a headless test can check a layout
  // without reading text off pixels. Cleared at the start of every frame.
  std::vector<std::string> shown;

  // `case_index` picks a case of a merged `trace`; the compare file shows the case with the same
  // (model, candidate, seed), or its only case.
  void open(const std::string& trace, const std::string& compare_trace, int case_index = 0);
  void select(const InspectTarget& t);  // opens a stage in the inspector
  // Shows one sequence of a batch run in every panel (the compared trace's too).
  void show_seq(int seq);
  void frame(float width, float height);
  int step() const;
};

void draw_overview(App& app, float width, float height);
void draw_drift(App& app, float width, float height);
void draw_inspector(App& app, float width, float height);
void draw_compare(App& app, float width, float height);
void draw_launches(App& app, float width, float height);
// The run metadata lines shared by the overview and compare headers, wrapped to the window.
void draw_run_info(App& app, const TraceModel& m, const char* label);
// "step" and a slider over the trace's model steps, side by side in `width` pixels; says where
// both went (--print-state "step slider:").
void step_slider(App& app, const char* where, float width);
// A batch run's sequence picker ("sequence" and a combo naming each one's failing stages at this
// step), beside the step slider; draws nothing for a run of one sequence (--print-state
// "sequence picker:").
void seq_picker(App& app, const char* where, float width);

}  // namespace ds::view

namespace ds::view {
// Heatmap pieces shared by the overview and compare panels.
// Returns how many rows got a label (every one, at a font size that fits the row).
int draw_heatmap_frame(ImDrawList* dl, const HeatmapLayout& l, const TraceModel& m, const std::string& title,
                       std::optional<int> marker_layer);
void draw_cells(ImDrawList* dl, const HeatmapLayout& l, const std::vector<std::uint32_t>& fill,
                const Grid* flags, const std::optional<CellPos>& selected);
std::optional<CellPos> heatmap_input(const HeatmapLayout& l, const char* id);
void cell_tooltip(const TraceModel& m, const trace::TraceRow& row, double score);
}  // namespace ds::view

namespace ds::view {
struct LogPlot;
struct CurveHover {
  float dist = 14;  // pixels: hovering within this of a point shows it
  const DriftSeries* series = nullptr;
  const DriftPoint* point = nullptr;
};
void draw_curves(ImDrawList* dl, const LogPlot& plot, const std::vector<DriftSeries>& series,
                 const std::vector<std::string>& stage_order, bool faded, CurveHover* hover);
// Drift curves, shared by the drift and compare panels.
void draw_floor(ImDrawList* dl, const LogPlot& plot, const std::vector<DriftSeries>& series);
void point_tooltip(const TraceModel& m, const DriftSeries& s, const DriftPoint& p, Metric metric,
                   const char* which);
}  // namespace ds::view
