#include "app.h"

#include <fmt/format.h>
#include <imgui.h>

#include "draw_util.h"

namespace ds::view {

void App::open(const std::string& trace, const std::string& compare_trace, int case_index) {
  path = trace;
  compare_path = compare_trace;
  model = TraceModel::open(trace, error, case_index);
  if (!compare_trace.empty()) {
    int k = 0;
    try {
      const auto cases = trace::list_cases(compare_trace);
      for (std::size_t i = 0; model && i < cases.size(); ++i)
        if (cases[i].key() == model->trace_case().key()) k = int(i);
    } catch (const trace::TraceError&) {
      // TraceModel::open below says what is wrong with the file.
    }
    compare = TraceModel::open(compare_trace, compare_error, k);
  }
  if (model) {
    for (const auto& s : default_drift_stages(*model)) state.drift_stages.insert(s);
    if (compare) compare_cells = compare_grids(*model, *compare);
  }
}

int App::step() const {
  if (!model || model->steps().empty()) return 0;
  return model->steps()[std::size_t(std::clamp<int>(state.step_index, 0, int(model->steps().size()) - 1))];
}

void App::select(const InspectTarget& t) {
  state.selected = t;
  state.focus.reset();
  state.coordinate.clear();
  inspection.reset();
  diff_dirty = true;
  zoom_nr = zoom_nc = 0;
  pending_tab = Tab::inspect;
}

void draw_run_info(const TraceModel& m, const char* label) {
  const RunInfo& i = m.info();
  ImGui::TextColored({0.6f, 0.6f, 0.65f, 1}, "%s", label);
  ImGui::SameLine();
  ImGui::TextUnformatted(m.path().c_str());
  ImGui::Text("model %s   candidate %s   modes %s   policy %s", i.model.c_str(), i.candidate.c_str(),
              i.modes.c_str(), i.policy.c_str());
  if (!i.finished) {
    ImGui::TextColored({1, 0.75f, 0.2f, 1},
                       "run did not finish: no result stored (killed or crashed harness)");
  } else {
    const bool pass = i.verdict.rfind("PASS", 0) == 0;
    ImGui::TextColored(pass ? ImVec4{0.4f, 0.9f, 0.4f, 1} : ImVec4{1, 0.35f, 0.3f, 1}, "%s",
                       i.verdict.c_str());
  }
  const std::string drift = i.drift_start_layer ? fmt::format("{}", *i.drift_start_layer) : "not in result";
  ImGui::Text("first failing stage: %s   drift starts at layer: %s",
              i.first_failure.empty() ? "none" : i.first_failure.c_str(), drift.c_str());
}

namespace {

void draw_error(const std::string& what, const std::string& message) {
  ImGui::Spacing();
  ImGui::TextColored({1, 0.35f, 0.3f, 1}, "Cannot open %s", what.c_str());
  ImGui::PushTextWrapPos(0);
  ImGui::TextUnformatted(message.c_str());
  ImGui::PopTextWrapPos();
}

// A run refused by a gate or stopped by bad input judged no stage: there is no heatmap or curve
// to draw, only why it stopped.
void draw_stopped(const TraceModel& m) {
  draw_run_info(m, "trace");
  const trace::TraceCase& c = m.trace_case();
  ImGui::Spacing();
  ImGui::TextColored({1, 0.75f, 0.2f, 1},
                     "The run stopped before any stage ran (%s, exit %d): no stage to show.",
                     c.status.c_str(), c.exit_code);
  ImGui::PushTextWrapPos(0);
  ImGui::TextUnformatted(c.reason.c_str());
  ImGui::PopTextWrapPos();
}

bool tab(const char* name, Tab t, App& app) {
  const ImGuiTabItemFlags f = app.pending_tab == t ? ImGuiTabItemFlags_SetSelected : 0;
  if (!ImGui::BeginTabItem(name, nullptr, f)) return false;
  app.state.tab = t;
  return true;
}

}  // namespace

void App::frame(float width, float height) {
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({width, height});
  ImGui::Begin("driftscope-view", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  if (!model) {
    draw_error(path, error);
  } else if (model->trace_case().stopped_early()) {
    draw_stopped(*model);
  } else if (ImGui::BeginTabBar("tabs")) {
    if (tab("Overview", Tab::overview, *this)) draw_overview(*this, width, height), ImGui::EndTabItem();
    if (tab("Drift", Tab::drift, *this)) draw_drift(*this, width, height), ImGui::EndTabItem();
    if (tab("Inspector", Tab::inspect, *this)) draw_inspector(*this, width, height), ImGui::EndTabItem();
    if (tab("Launches", Tab::launches, *this)) draw_launches(*this, width, height), ImGui::EndTabItem();
    if (!compare_path.empty() && tab("Compare", Tab::compare, *this)) {
      if (compare)
        draw_compare(*this, width, height);
      else
        draw_error(compare_path, compare_error);
      ImGui::EndTabItem();
    }
    // SetSelected takes effect during this frame's tab bar; clear it afterwards.
    if (pending_tab == state.tab) pending_tab.reset();
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace ds::view
