// A kernel table in a module of its own, dlopen'ed when a run first needs it: the checked flavour
// of the kernels (--simt-racecheck) and the nvcc flavour (the cuda candidate). Neither is linked
// into driftscope, so building driftscope compiles neither (docs/build.md); an installed driftscope
// finds them in PREFIX/<libdir>/driftscope, a build tree where the build put them, and a build
// tree that has not built one yet builds it on first use.
#pragma once

#include <filesystem>
#include <string>

#include "kernels.h"

namespace ds::gpu {

struct KernelModule {
  void* handle = nullptr;
  const dsk::KernelTable* table = nullptr;
  std::string why;  // why there is no table, when there is none
};

// Opens the module built at `built` (its CMake target `target`), or its installed twin, and calls
// its exported `symbol` (a `const dsk::KernelTable* ()`), once per process: later calls return
// what the first one found. `what` names it in messages ("the checked kernel module").
const KernelModule& open_kernel_module(const std::filesystem::path& built, const std::string& target,
                                       const char* symbol, const std::string& what);

}  // namespace ds::gpu
