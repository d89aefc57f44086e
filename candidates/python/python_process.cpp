#include "python_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "candidate.h"
#include "lifeline.h"
#include "program_path.h"
#include "sandbox.h"
#include "plugin/plugin_library.h"

namespace ds::python {

namespace {

// Importing torch and triton takes seconds; a probe silent for two minutes is hung.
constexpr double kProbeTimeoutS = 120;

std::string sdk_dir() {
  const char* dir = std::getenv("DRIFTSCOPE_PYTHON_SDK");
  std::error_code ec;
  if (!dir || !std::filesystem::is_regular_file(std::filesystem::path(dir) / "driftscope" / "_host.py", ec))
    throw std::runtime_error(fmt::format(
        "the Driftscope Python SDK is not at '{}' (DRIFTSCOPE_PYTHON_SDK): run the driftscope program of an "
        "install or a build tree, which sets it",
        dir ? dir : ""));
  return dir;
}

}  // namespace

std::string interpreter() {
  const char* p = std::getenv("DRIFTSCOPE_PYTHON");
  return p && *p ? p : "python3";
}

PythonProcess::PythonProcess(const std::string& mode, const std::string& file, const std::string& name) {
  const std::string python = interpreter();
  const std::string exe = program_on_path(python);
  if (exe.empty())
    throw PluginError(
        fmt::format("py:{}: cannot run Python '{}': not found or not executable (choose one with "
                    "--python or DRIFTSCOPE_PYTHON)",
                    file, python));
  const std::string sdk = sdk_dir();
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string pythonpath = old_path && *old_path ? sdk + ":" + old_path : sdk;
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
    throw std::runtime_error("cannot create pipes for the Python candidate");
  std::fflush(nullptr);
  pid_ = lifeline::fork_supervised();
  if (pid_ < 0) throw std::runtime_error("cannot fork the Python candidate's process");
  if (pid_ == 0) {
    // fds 3 and 4 may be pipe ends already: move both out of the way first.
    const int in = ::fcntl(down[0], F_DUPFD, 10), out = ::fcntl(up[1], F_DUPFD, 10);
    if (in < 0 || out < 0 || ::dup2(in, 3) < 0 || ::dup2(out, 4) < 0) ::_exit(126);
    ::close(in);
    ::close(out);
    sandbox::enter_child(exe.c_str());  // this execv of the interpreter, and no other exec
    ::setenv("PYTHONPATH", pythonpath.c_str(), 1);
    ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    std::vector<const char*> argv = {exe.c_str(), "-m", "driftscope._host", mode.c_str(), file.c_str()};
    if (!name.empty()) argv.push_back(name.c_str());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), const_cast<char* const*>(argv.data()));
    std::fprintf(stderr, "driftscope: cannot exec %s: %s\n", exe.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  to_ = down[1];
  from_ = up[0];
  ::signal(SIGPIPE, SIG_IGN);
}

PythonProcess::~PythonProcess() {
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  if (pid_ > 0 && !reaped_) lifeline::end_supervised(pid_);
}

bool PythonProcess::alive() {
  if (!reaped_ && lifeline::wait_supervised(pid_, status_, false)) reaped_ = true;
  return !reaped_;
}

bool PythonProcess::send(const std::string& msg) { return wire::send_msg(to_, msg); }

bool PythonProcess::recv(std::string& msg, wire::Deadline deadline, bool* timed_out) {
  return wire::recv_msg(from_, msg, deadline, timed_out, wire::kMaxMessage, nullptr,
                        [this] { return alive(); });
}

std::string PythonProcess::why_silent(bool timed_out, double timeout_s) {
  if (!reaped_) {
    status_ = lifeline::end_supervised(pid_);
    reaped_ = true;
  }
  if (timed_out) return fmt::format("hung: no answer within {} s", timeout_s);
  if (WIFSIGNALED(status_) && WTERMSIG(status_) == SIGSYS)
    return "its Python process made a system call the sandbox forbids (a socket other than AF_UNIX) and was "
           "stopped (docs/sandbox.md)";
  if (WIFSIGNALED(status_))
    return fmt::format("its Python process was killed by signal {} ({})", WTERMSIG(status_),
                       strsignal(WTERMSIG(status_)));
  return fmt::format(
      "its Python process ({}) exited with status {} without answering (its error is above; the SDK needs "
      "numpy in that Python: Debian's python3-numpy, or --python to choose another)",
      interpreter(), WEXITSTATUS(status_));
}

std::string probe(const std::string& mode, const std::string& file, const std::string& name,
                  const std::string& request, const std::string& what) {
  PythonProcess proc(mode, file, name);
  std::string reply;
  bool timed_out = false;
  if (!proc.send(request) || !proc.recv(reply, wire::deadline_in(kProbeTimeoutS), &timed_out)) {
    const std::string why = proc.why_silent(timed_out, kProbeTimeoutS);
    wire::throw_if_sandbox_blocked(what);
    throw CandidateCrash(what, why);
  }
  wire::throw_if_sandbox_blocked(what);
  const std::string tag = reply.substr(0, 2);
  if (tag == "ok") return reply.substr(2);
  std::string text;
  try {
    wire::Reader r{reply};
    r.at = 2;
    text = r.str();
  } catch (const wire::Malformed& e) {
    throw CandidateCrash(what, fmt::format("sent a malformed answer: {}", e.what()));
  }
  if (tag == "bd") throw PluginError(text);
  if (tag == "ex") throw CandidateCrash(what, fmt::format("raised {}", text));
  throw CandidateCrash(what, "sent a malformed answer");
}

}  // namespace ds::python
