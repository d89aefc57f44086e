// One command of a bare .cu's build (cmake configure, cmake --build and what runs under it),
// bounded and supervised: every process of it runs under the limits below, and all of it ends
// with driftscope, however driftscope ends (lifeline.h).
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ds::cli {

// What each process of the build (cmake, ninja, the compiler driver, cc1plus, the linker) may
// take: a runaway compile (an `#include "/dev/zero"`, a template that never ends, an output that
// never stops growing) fails the build, exit 2, instead of taking the machine (docs/verify.md).
struct BuildLimits {
  std::uint64_t address_space = 0;  // RLIMIT_AS, bytes (DRIFTSCOPE_BUILD_MEMORY)
  rlim_t cpu_seconds = 0;           // RLIMIT_CPU
  std::uint64_t file_size = 0;      // RLIMIT_FSIZE, bytes
};

// The defaults, with DRIFTSCOPE_BUILD_MEMORY (a size such as 4G or 512M) for the address space;
// a malformed value is an InputError naming the variable.
BuildLimits build_limits();

// Runs `args` (args[0] looked up on the PATH) under `limits`, stdin from /dev/null, stdout and
// stderr appended to `log`; its exit status (128 + N for a death by signal N), or -1 when args[0]
// was not found.
int run_logged(const std::vector<std::string>& args, const std::filesystem::path& log,
               const BuildLimits& limits);

// When the build log shows a process of the build stopped by one of `limits` (out of memory, out
// of CPU time, a file too large): a sentence naming that limit and how to raise it; else empty.
std::string limit_diagnosis(const std::string& log, const BuildLimits& limits);

}  // namespace ds::cli
