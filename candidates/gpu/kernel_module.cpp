#include "kernel_module.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "lifeline.h"

namespace ds::gpu {

namespace {

// The build tree `built` lies in: the nearest folder above it with a CMakeCache.txt.
std::filesystem::path build_tree_of(const std::filesystem::path& built) {
  std::error_code ec;
  for (std::filesystem::path p = built.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (std::filesystem::exists(p / "CMakeCache.txt", ec)) return p;
  return {};
}

// `cmake --build TREE --target TARGET`, its output on stderr (stdout is the run's report).
std::string build_module(const std::filesystem::path& tree, const std::string& target) {
  fmt::print(stderr, "driftscope: building {} on first use: cmake --build {} --target {}\n", target,
             tree.string(), target);
  std::fflush(stderr);
  // Supervised: the build and its compilers end with driftscope, however it ends (lifeline.h).
  const pid_t pid = lifeline::fork_supervised();
  if (pid < 0) return "cannot start cmake";
  if (pid == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    const std::string t = tree.string();
    ::execlp("cmake", "cmake", "--build", t.c_str(), "--target", target.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  lifeline::wait_supervised(pid, status, true);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  return fmt::format("`cmake --build {} --target {}` failed ({})", tree.string(), target,
                     WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : std::string("killed"));
}

KernelModule open_module(const std::filesystem::path& built, const std::string& target, const char* symbol,
                         const std::string& what) {
  KernelModule m;
  std::error_code ec;
  // Installed, the module sits in PREFIX/<libdir>/driftscope beside PREFIX/bin/driftscope.
  std::filesystem::path path;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed =
        exe.parent_path().parent_path() / DRIFTSCOPE_INSTALL_LIBDIR / "driftscope" / built.filename();
    if (std::filesystem::exists(installed, ec)) path = installed;
  }
  if (path.empty()) {
    path = built;
    if (!std::filesystem::exists(path, ec)) {
      const std::filesystem::path tree = build_tree_of(built);
      if (tree.empty()) {
        m.why = fmt::format("{} is not installed beside this driftscope and {} does not exist", what,
                            built.string());
        return m;
      }
      if (std::string failed = build_module(tree, target); !failed.empty()) {
        m.why = fmt::format("{} is not built, and building it failed: {}", what, failed);
        return m;
      }
    }
  }
  m.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.handle == nullptr) {
    m.why = fmt::format("{} {} cannot be loaded: {}", what, path.string(), ::dlerror());
    return m;
  }
  using TableFn = const dsk::KernelTable* (*)();
  auto fn = reinterpret_cast<TableFn>(::dlsym(m.handle, symbol));
  if (fn == nullptr) {
    m.why = fmt::format("{} {} has no {}", what, path.string(), symbol);
    return m;
  }
  m.table = fn();
  return m;
}

}  // namespace

const KernelModule& open_kernel_module(const std::filesystem::path& built, const std::string& target,
                                       const char* symbol, const std::string& what) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, KernelModule> opened;  // nodes stay put: references stay valid
  std::lock_guard lock(mutex);
  auto it = opened.find(built);
  if (it == opened.end()) it = opened.emplace(built, open_module(built, target, symbol, what)).first;
  return it->second;
}

}  // namespace ds::gpu
