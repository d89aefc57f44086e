#include "checked_kernels.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernel_module.h"
#include "launch_sinks.h"

namespace ds::gpu {

namespace {

// The checked runtime maps AddressSanitizer's shadow ranges (x86-64 Linux layout) as it loads, and
// stops the process where it cannot (kernels/simt/src/access_hooks.cpp's __asan_init). Asked first,
// driftscope falls back to the page-fault checker with the reason instead. A range mapped already
// is another checked module's shadow (a plugin's), which the runtime shares.
std::string shadow_unavailable() {
  constexpr std::pair<std::uintptr_t, std::uintptr_t> kRanges[] = {{0x7fff8000ull, 0x8fff7000ull},
                                                                   {0x02008fff7000ull, 0x10007fff8000ull}};
  for (const auto& [lo, hi] : kRanges) {
    void* want = reinterpret_cast<void*>(lo);
    void* got = ::mmap(want, hi - lo, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    const int err = errno;
    if (got != MAP_FAILED) ::munmap(got, hi - lo);
    if (got == want || (got == MAP_FAILED && err == EEXIST)) continue;
    return fmt::format(
        "its access shadow [{:#x}, {:#x}) cannot be mapped: {} (it needs that address range "
        "free and memory overcommit, as AddressSanitizer does)",
        lo, hi, got == MAP_FAILED ? std::strerror(err) : "the range is in use");
  }
  return {};
}

KernelModule open_module() {
  if (std::string why = shadow_unavailable(); !why.empty())
    return {.why = "the checked kernel flavour cannot run here: " + why};
#if defined(DRIFTSCOPE_CHECKED_KERNELS_MODULE)
  return open_kernel_module(DRIFTSCOPE_CHECKED_KERNELS_MODULE, "ds_kernels_checked_module",
                            "driftscope_checked_kernel_table", "the checked kernel module");
#else
  return {.why = "this driftscope was built without the checked kernel flavour (a sanitizer build)"};
#endif
}

}  // namespace

const dsk::KernelTable* checked_kernels(std::string& why) {
  static const KernelModule m = open_module();  // the shadow's check too, once
  why = m.why;
  if (m.table == nullptr) return nullptr;
  launch_sinks::install_in_library(m.handle);  // this run's settings, sinks and launch records
  return m.table;
}

}  // namespace ds::gpu
