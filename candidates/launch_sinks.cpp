#include "launch_sinks.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <string>

#include "launch_log.h"
#include "simt/simt_common.h"

#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
#include "simt/simt.h"
#endif
#if defined(DRIFTSCOPE_HAVE_CUPTI)
#include "gpu/cupti_recorder.h"
#endif

namespace ds::launch_sinks {
namespace {

void to_launch_log(const simt_launch_info* info, void* /*user*/) {
  LaunchRecord r;
  r.kernel = info->kernel;
  r.backend = "simt";
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = info->grid[i];
    r.block[i] = info->block[i];
  }
  r.dyn_smem_bytes = info->dyn_smem_bytes;
  r.duration_us = info->seconds * 1e6;
  r.emulated = true;
  launch_log::record(std::move(r));
}

}  // namespace

bool install_in_library(void* dl_handle) {
  using Setter = void (*)(simt_launch_sink, void*);
  void* sym = ::dlsym(dl_handle, "driftscope_simt_set_launch_sink");
  if (sym == nullptr) return false;
  reinterpret_cast<Setter>(sym)(&to_launch_log, nullptr);
  return true;
}

void start(std::string_view backend) {
  if (backend == "simt") {
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
    static const bool installed = (driftscope_simt_set_launch_sink(&to_launch_log, nullptr), true);
    (void)installed;
#endif
    return;
  }
#if defined(DRIFTSCOPE_HAVE_CUPTI)
  const std::string why = gpu::cupti_recorder::start();
#else
  const std::string why = "this driftscope was built without CUPTI";
#endif
  if (!why.empty())
    fmt::print(stderr, "driftscope: no launch records for the {} kernels: {}\n", backend, why);
}

}  // namespace ds::launch_sinks
