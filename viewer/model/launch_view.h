// The trace's kernel launch records as the viewer shows them: the launches behind an inspected
// stage, and kernel time per layer for the Launches tab.
#pragma once

#include <string>
#include <vector>

#include "inspector_model.h"
#include "launch_log.h"

namespace ds::view {

// The launches of the step that produced `t`'s stage at its model step, layer and lane.
std::vector<StepLaunch> launches_behind(const std::vector<StepLaunch>& all, const InspectTarget& t);

struct LayerTime {
  int layer = 0;  // kModelLayer for the embedding and head
  double us = 0;
  int launches = 0;
};
// Kernel time of every layer at one model step and lane, model level first, then layer order.
std::vector<LayerTime> time_per_layer(const std::vector<StepLaunch>& all, int step, Mode mode);

// "dsk_simt::rmsnorm_kernel  grid 4x1x1  block 64x1x1  smem 0 B  51.2 us (emulated)"
std::string launch_line(const LaunchRecord& l);

}  // namespace ds::view
