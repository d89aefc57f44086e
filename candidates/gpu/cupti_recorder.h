// Launch records of kernels run on a GPU, from CUPTI's activity API (kernel activity records
// carry the name, grid, block, shared memory and the device's start and end timestamps).
#pragma once

#include <string>

namespace ds::gpu::cupti_recorder {

// Starts recording kernel activity in this process and registers a flusher with the launch log,
// so launch_log::take() delivers every kernel finished so far. Empty on success (also when already
// recording), otherwise CUPTI's reason.
std::string start();

}  // namespace ds::gpu::cupti_recorder
