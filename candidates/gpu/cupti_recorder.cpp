// CUPTI fills buffers we hand it and gives each back when full or flushed. A flush after every
// candidate step (launch_log::take) returns the step's kernels: the candidate has copied its
// outputs to the host by then, so they have all finished.
#include "cupti_recorder.h"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "launch_log.h"
#include "simt/simt_common.h"

namespace ds::gpu::cupti_recorder {
namespace {

constexpr std::size_t kBufferBytes = std::size_t(1) << 20;
constexpr std::size_t kBufferAlign = 8;  // CUPTI's requirement for activity buffers

std::string cupti_error(CUptiResult r, const char* what) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(what) + ": " + (s ? s : "unknown CUPTI error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  struct Timed {
    std::uint64_t start;
    LaunchRecord record;
  };
  std::vector<Timed> kernels;
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    LaunchRecord r;
    r.kernel = simt::kernel_display_name(k->name ? k->name : "?");
    r.backend = "cuda";
    r.grid = {std::uint32_t(k->gridX), std::uint32_t(k->gridY), std::uint32_t(k->gridZ)};
    r.block = {std::uint32_t(k->blockX), std::uint32_t(k->blockY), std::uint32_t(k->blockZ)};
    r.dyn_smem_bytes = std::uint64_t(std::max(k->dynamicSharedMemory, 0));
    r.duration_us = double(k->end - k->start) / 1e3;  // CUPTI timestamps are nanoseconds
    r.emulated = false;
    kernels.push_back({k->start, std::move(r)});
  }
  std::free(buffer);
  // Records of concurrent kernels arrive as they complete; launch order is start order.
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const Timed& a, const Timed& b) { return a.start < b.start; });
  for (auto& k : kernels) launch_log::record(std::move(k.record));
}

}  // namespace

std::string start() {
  static std::mutex m;
  static bool recording = false;
  std::lock_guard lock(m);
  if (recording) return {};
  if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
    return cupti_error(r, "cuptiActivityRegisterCallbacks");
  if (CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
    return cupti_error(r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
  launch_log::add_flusher([] { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); });
  recording = true;
  return {};
}

}  // namespace ds::gpu::cupti_recorder
