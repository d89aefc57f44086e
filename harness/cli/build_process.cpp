#include "build_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lifeline.h"
#include "memory_estimate.h"
#include "runner.h"

namespace ds::cli {

namespace {

// The bare .cu build of tests/install/bare_cu/my_rmsnorm.cu fails under 160 MiB of address space
// per process and passes under 256 MiB (cc1plus on the SIMT runtime's headers takes the most):
// 4 GiB leaves room for kernels with far more templates, and still stops an endless read (an
// `#include "/dev/zero"` fails in seconds) long before it takes the machine.
constexpr std::uint64_t kDefaultAddressSpace = std::uint64_t(4) << 30;
// A compile of one kernel file takes seconds to a minute on a slow machine.
constexpr rlim_t kDefaultCpuSeconds = 900;
// The objects and plugins of one kernel are megabytes.
constexpr std::uint64_t kDefaultFileSize = std::uint64_t(2) << 30;
constexpr const char* kMemoryVariable = "DRIFTSCOPE_BUILD_MEMORY";

// Lowers the limit `resource` to `value` (never above its hard limit, which an unprivileged
// process cannot raise). The soft limit signals; the hard limit, a little above, kills.
void lower_limit(int resource, rlim_t value, rlim_t hard_margin) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0) return;
  r.rlim_max = std::min(r.rlim_max, value + hard_margin);
  r.rlim_cur = std::min(r.rlim_max, value);
  ::setrlimit(resource, &r);
}

[[noreturn]] void exec_failed(int report_fd) {
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

BuildLimits build_limits() {
  BuildLimits l{kDefaultAddressSpace, kDefaultCpuSeconds, kDefaultFileSize};
  if (const char* v = std::getenv(kMemoryVariable); v && *v) {
    const auto bytes = parse_memory_size(v);
    if (!bytes)
      throw InputError(
          fmt::format("{}={}: expected a size such as 4G, 512M or a number of bytes", kMemoryVariable, v));
    l.address_space = *bytes;
  }
  return l;
}

int run_logged(const std::vector<std::string>& args, const std::filesystem::path& log,
               const BuildLimits& limits) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child writes why its exec failed here; a successful exec closes it (O_CLOEXEC) unwritten.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw InputError(fmt::format("cannot run {}: {}", args[0], std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = lifeline::fork_supervised();
  if (pid == 0) {
    ::close(report[0]);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0 || ::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(out, STDERR_FILENO) < 0)
      exec_failed(report[1]);
    lower_limit(RLIMIT_AS, rlim_t(limits.address_space), 0);
    lower_limit(RLIMIT_CPU, limits.cpu_seconds, 10);
    lower_limit(RLIMIT_FSIZE, rlim_t(limits.file_size), 0);
    ::execvp(argv[0], argv.data());
    exec_failed(report[1]);
  }
  const int fork_errno = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    throw InputError(fmt::format("cannot run {}: {}", args[0], std::strerror(fork_errno)));
  }
  int err = 0;
  ssize_t got = 0;
  while ((got = ::read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  int status = 0;
  lifeline::wait_supervised(pid, status, true);
  if (got == ssize_t(sizeof err)) {
    if (err == ENOENT) return -1;
    throw InputError(fmt::format("cannot run {}: {}", args[0], std::strerror(err)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string limit_diagnosis(const std::string& log, const BuildLimits& limits) {
  // The first line of the log with one of `phrases`, trimmed; empty when none has one.
  const auto line_saying = [&](std::initializer_list<const char*> phrases) -> std::string {
    std::size_t at = std::string::npos;
    for (const char* p : phrases) at = std::min(at, log.find(p));
    if (at == std::string::npos) return "";
    const std::size_t from = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
    std::string line = log.substr(from, log.find('\n', at) - from);
    line.erase(0, line.find_first_not_of(" \t"));
    return line;
  };
  // "failed to map segment": the dynamic loader of a program of the build, before its main().
  if (const std::string line = line_saying({"out of memory", "memory exhausted", "std::bad_alloc",
                                            "Cannot allocate memory", "failed to map segment"});
      !line.empty())
    return fmt::format(
        "a process of the build ran out of memory ({}): each may take {} of address space ({}=SIZE "
        "sets it; docs/verify.md). A file it reads without end (an #include of a device such as "
        "/dev/zero) or a compile that never stops growing does this",
        line, format_bytes(limits.address_space), kMemoryVariable);
  if (const std::string line = line_saying({"CPU time limit exceeded"}); !line.empty())
    return fmt::format("a process of the build ran out of CPU time ({}): each may take {} s (docs/verify.md)",
                       line, limits.cpu_seconds);
  if (const std::string line = line_saying({"File size limit exceeded"}); !line.empty())
    return fmt::format(
        "a process of the build wrote a file larger than {}, the most each may write ({}; docs/verify.md)",
        format_bytes(limits.file_size), line);
  return "";
}

}  // namespace ds::cli
