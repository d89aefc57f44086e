// Launches tab: kernel time per layer at the chosen model step, one bar chart per lane, from the
// trace's launch records. Emulated (SIMT) times are CPU wall time and say so.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "app.h"
#include "draw_util.h"
#include "launch_view.h"

namespace ds::view {

void draw_launches(App& app, float width, float height) {
  const TraceModel& m = *app.model;
  if (!m.launches()) {
    ImGui::TextUnformatted(
        "This trace has no launch records (written by a driftscope older than /launches).");
    return;
  }
  const std::vector<StepLaunch>& all = *m.launches();
  if (all.empty()) {
    ImGui::TextUnformatted(
        "The candidate launched no kernel (a plain C++ candidate, or a plugin built without "
        "driftscope_add_simt_kernel).");
    return;
  }
  if (m.steps().size() > 1)
    ImGui::SliderInt("step", &app.state.step_index, 0, int(m.steps().size()) - 1, "step index %d");
  const bool emulated = all.front().launch.emulated;
  ImGui::Text("%zu launches on %s; kernel time per layer at step %d%s", all.size(),
              all.front().launch.backend.c_str(), app.step(),
              emulated ? " (emulated: CPU wall time of the SIMT runtime, not GPU time)" : " (GPU time)");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float top = ImGui::GetCursorScreenPos().y + 8;
  const int lanes = int(m.modes().size());
  const float lane_h = (height - top - 10) / float(std::max(lanes, 1));
  for (int k = 0; k < lanes; ++k) {
    const Mode mode = m.modes()[std::size_t(k)];
    const std::vector<LayerTime> times = time_per_layer(all, app.step(), mode);
    const float y0 = top + float(k) * lane_h, label_w = 70, x0 = 10 + label_w, x1 = width - 200;
    dl->AddText({10, y0}, kText, fmt::format("{} mode", mode_name(mode)).c_str());
    double most = 0;
    for (const LayerTime& t : times) most = std::max(most, t.us);
    const float row_h = std::min(22.f, (lane_h - 30) / float(std::max<std::size_t>(times.size(), 1)));
    for (std::size_t i = 0; i < times.size(); ++i) {
      const LayerTime& t = times[i];
      const float y = y0 + 22 + float(i) * row_h;
      const float w = most > 0 ? float(t.us / most) * (x1 - x0) : 0;
      const std::string label = t.layer < 0 ? "model" : fmt::format("layer {}", t.layer);
      dl->AddText({10, y}, kDimText, label.c_str());
      dl->AddRectFilled({x0, y + 2}, {x0 + std::max(w, 1.f), y + row_h - 3}, kLaunchBarColour.packed());
      dl->AddText({x0 + w + 6, y}, kText,
                  fmt::format("{:.3f} ms, {} launches", t.us / 1e3, t.launches).c_str());
    }
  }
}

}  // namespace ds::view
