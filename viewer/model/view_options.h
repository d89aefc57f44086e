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

enum class Tab { overview, drift, inspect, compare };

// --view overview|drift|compare|inspect:STEP:LAYER:STAGE:MODE ("model" or -1 for the model layer)
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

}  // namespace ds::view
