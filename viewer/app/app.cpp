#include "app.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

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

void App::show_seq(int seq) {
  if (!model || seq == model->seq()) return;
  model->select_seq(seq);
  if (compare) {
    compare->select_seq(seq);
    compare_cells = compare_grids(*model, *compare);
  }
  inspection.reset();  // the inspector's stage is now the other sequence's
  diff_dirty = true;
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

namespace {

// Short parts on one line while they fit the window, the next part on a new line when not.
void flow(const std::vector<std::string>& parts) {
  const float avail = ImGui::GetContentRegionAvail().x, gap = 24;
  float used = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const float w = ImGui::CalcTextSize(parts[i].c_str()).x;
    if (i > 0 && used + gap + w <= avail) {
      ImGui::SameLine(0, gap);
      used += gap;
    } else {
      used = 0;
    }
    ImGui::TextUnformatted(parts[i].c_str());
    used += w;
  }
}

void wrapped(const ImVec4& colour, const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void draw_run_info(App& app, const TraceModel& m, const char* label) {
  const RunInfo& i = m.info();
  const float x0 = ImGui::GetCursorScreenPos().x, y0 = ImGui::GetCursorScreenPos().y;
  ImGui::TextColored({0.6f, 0.6f, 0.65f, 1}, "%s", label);
  ImGui::SameLine();
  ImGui::TextWrapped("%s", m.path().c_str());
  std::vector<std::string> facts{"model " + i.model, "candidate " + i.candidate, "modes " + i.modes,
                                 "policy " + i.policy};
  if (!i.probe.empty()) facts.push_back("probe " + i.probe);
  flow(facts);
  // Every verdict below is relative to B: a reader who missed it would take a pass for oracle parity.
  if (!i.baseline.empty())
    wrapped({1, 0.75f, 0.2f, 1}, fmt::format("judged against baseline {}, not the oracle", i.baseline));
  if (!i.finished) {
    wrapped({1, 0.75f, 0.2f, 1}, "run did not finish: no result stored (killed or crashed harness)");
  } else {
    const bool pass = i.verdict.rfind("PASS", 0) == 0;
    wrapped(pass ? ImVec4{0.4f, 0.9f, 0.4f, 1} : ImVec4{1, 0.35f, 0.3f, 1}, i.verdict);
  }
  flow({"first failing stage: " + (i.first_failure.empty() ? std::string("none") : i.first_failure),
        "drift starts at: " + i.drift_text});
  app.shown.push_back(fmt::format("{} header: {} drift starts at: {}", label,
                                  rect_str({x0, y0, ImGui::GetContentRegionMax().x + ImGui::GetWindowPos().x,
                                            ImGui::GetCursorScreenPos().y}),
                                  i.drift_text));
}

void step_slider(App& app, const char* where, float width) {
  const TraceModel& m = *app.model;
  if (m.steps().size() < 2) return;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("step");
  const ImVec2 l0 = ImGui::GetItemRectMin(), l1 = ImGui::GetItemRectMax();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(40.f, width - (l1.x - l0.x) - ImGui::GetStyle().ItemSpacing.x));
  ImGui::SliderInt(fmt::format("##step_{}", where).c_str(), &app.state.step_index, 0,
                   int(m.steps().size()) - 1, "model step index %d");
  const ImVec2 s0 = ImGui::GetItemRectMin(), s1 = ImGui::GetItemRectMax();
  app.shown.push_back(fmt::format("{} step slider: label {} slider {}", where,
                                  rect_str({l0.x, l0.y, l1.x, l1.y}), rect_str({s0.x, s0.y, s1.x, s1.y})));
}

void seq_picker(App& app, const char* where, float width) {
  const TraceModel& m = *app.model;
  if (m.seqs().size() < 2) return;
  const auto label = [&](int seq) {
    const int n = m.failing(app.step(), seq);
    return n ? fmt::format("sequence {} ({} failing)", seq, n) : fmt::format("sequence {}", seq);
  };
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("sequence");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(width);
  if (ImGui::BeginCombo(fmt::format("##seq_{}", where).c_str(), label(m.seq()).c_str())) {
    for (int seq : m.seqs())
      if (ImGui::Selectable(label(seq).c_str(), seq == m.seq())) app.show_seq(seq);
    ImGui::EndCombo();
  }
  const ImVec2 c0 = ImGui::GetItemRectMin(), c1 = ImGui::GetItemRectMax();
  app.shown.push_back(fmt::format("{} sequence picker: showing {} of {} sequences, combo {}", where,
                                  label(app.model->seq()), m.seqs().size(),
                                  rect_str({c0.x, c0.y, c1.x, c1.y})));
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
void draw_stopped(App& app, const TraceModel& m) {
  draw_run_info(app, m, "trace");
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
  shown.clear();
  ImGui::SetNextWindowPos({0, 0});
  ImGui::SetNextWindowSize({width, height});
  ImGui::Begin("driftscope-view", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  if (!model) {
    draw_error(path, error);
  } else if (model->trace_case().stopped_early()) {
    draw_stopped(*this, *model);
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
