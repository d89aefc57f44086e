// The viewer's command line and selections, kept free of ImGui so they are parsed and tested
// like any other data.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drift_series.h"
#include "inspector_model.h"

namespace ds::view {

enum class Tab { overview, drift, inspect, compare, launches };

// --view overview|drift|compare|launches|inspect:STEP:LAYER:STAGE:MODE ("model" or -1 for the model layer)
struct ViewSpec {
  Tab tab = Tab::overview;
  std::optional<InspectTarget> target;
};
std::optional<ViewSpec> parse_view(const std::string& text, std::string& error);
// "1600x1000" -> {1600, 1000}
std::optional<std::pair<int, int>> parse_size(const std::string& text);

// What the user has chosen; the app edits it, the panels read it.
struct ViewState {
  Tab tab = Tab::overview;
  int step_index = 0;
  std::optional<InspectTarget> selected;  // the inspector's stage
  std::set<std::string> drift_stages;
  Metric metric = Metric::tol_ratio;
  bool show_isolated = true, show_chained = true;
  std::string coordinate;             // typed into the inspector
  std::optional<std::int64_t> focus;  // flat index the inspector centres on
};

// Scripted mouse input for headless runs (--click X,Y, repeatable), so tests can drive the viewer
// as a user would under Xvfb. Each click takes kFramesPerClick frames: hover at (x, y), press,
// release; clicks play one after another from frame 1 (frame 0 lays the window out first).
struct Click {
  float x = 0, y = 0;
};
std::optional<Click> parse_click(const std::string& text);  // "X,Y" in window pixels
inline constexpr int kFramesPerClick = 3;
struct MouseAtFrame {
  float x = 0, y = 0;
  bool down = false;
};
// The mouse a script sets on `frame`; nullopt before the first and after the last click.
std::optional<MouseAtFrame> scripted_mouse(const std::vector<Click>& clicks, int frame);
// The state a --print-state line describes: the open tab and the inspector's stage.
std::string describe_state(const ViewState& state);

}  // namespace ds::view
