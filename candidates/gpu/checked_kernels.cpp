#include "checked_kernels.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
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

Module open_module() {
  Module m;
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
