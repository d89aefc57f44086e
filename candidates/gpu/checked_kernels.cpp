#include "checked_kernels.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "launch_sinks.h"

namespace ds::gpu {

namespace {

struct Module {
  void* handle = nullptr;
  const dsk::KernelTable* table = nullptr;
  std::string why;
};

// Installed, the module sits in PREFIX/<libdir>/driftscope beside PREFIX/bin/driftscope; in a
// build tree, where the build put it.
std::vector<std::filesystem::path> module_paths() {
  std::vector<std::filesystem::path> out;
#if defined(DRIFTSCOPE_CHECKED_KERNELS_MODULE)
  const std::filesystem::path built = DRIFTSCOPE_CHECKED_KERNELS_MODULE;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    out.push_back(exe.parent_path().parent_path() / DRIFTSCOPE_INSTALL_LIBDIR / "driftscope" /
                  built.filename());
  out.push_back(built);
#endif
  return out;
}

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

Module open_module() {
  Module m;
  if (std::string why = shadow_unavailable(); !why.empty()) {
    m.why = "the checked kernel flavour cannot run here: " + why;
    return m;
  }
  const std::vector<std::filesystem::path> paths = module_paths();
  if (paths.empty()) {
    m.why = "this driftscope was built without the checked kernel flavour (a sanitizer build)";
    return m;
  }
  std::error_code ec;
  std::filesystem::path path = paths.back();
  for (const auto& p : paths)
    if (std::filesystem::exists(p, ec)) {
      path = p;
      break;
    }
  m.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.handle == nullptr) {
    m.why = fmt::format("the checked kernel module {} cannot be loaded: {}", path.string(), ::dlerror());
    return m;
  }
  using TableFn = const dsk::KernelTable* (*)();
  auto fn = reinterpret_cast<TableFn>(::dlsym(m.handle, "driftscope_checked_kernel_table"));
  if (fn == nullptr) {
    m.why = fmt::format("{} has no driftscope_checked_kernel_table", path.string());
    return m;
  }
  m.table = fn();
  return m;
}

}  // namespace

const dsk::KernelTable* checked_kernels(std::string& why) {
  static const Module m = open_module();
  why = m.why;
  if (m.table == nullptr) return nullptr;
  launch_sinks::install_in_library(m.handle);  // this run's settings, sinks and launch records
  return m.table;
}

}  // namespace ds::gpu
