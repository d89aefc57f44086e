#include "launch_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ds::view {

std::vector<StepLaunch> launches_behind(const std::vector<StepLaunch>& all, const InspectTarget& t) {
  std::vector<StepLaunch> out;
  for (const StepLaunch& l : all)
    if (l.step == t.step && l.layer == t.layer && l.mode == t.mode &&
        std::find(l.stages.begin(), l.stages.end(), t.stage) != l.stages.end())
      out.push_back(l);
  return out;
}

std::vector<LayerTime> time_per_layer(const std::vector<StepLaunch>& all, int step, Mode mode) {
  std::map<int, LayerTime> by_layer;  // kModelLayer (-1) sorts first
  for (const StepLaunch& l : all) {
    if (l.step != step || l.mode != mode) continue;
    LayerTime& t = by_layer[l.layer];
    t.layer = l.layer;
    t.us += l.launch.duration_us;
    ++t.launches;
  }
  std::vector<LayerTime> out;
  for (const auto& [layer, t] : by_layer) out.push_back(t);
  return out;
}

std::string launch_line(const LaunchRecord& l) {
  return fmt::format(
      "{}  grid {}x{}x{}  block {}x{}x{}  smem {} B  {:.1f} us ({})", l.kernel, l.grid[0], l.grid[1],
      l.grid[2], l.block[0], l.block[1], l.block[2], l.dyn_smem_bytes, l.duration_us,
      l.emulated ? fmt::format("{}, emulated: CPU time", l.backend) : l.backend + ", GPU time");
}

}  // namespace ds::view
