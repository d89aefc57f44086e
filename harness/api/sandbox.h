// The candidate's processes in a sandbox (docs/sandbox.md): `verify` runs kernels nobody reviewed,
// whose host code may call system(), open a socket or write anywhere with the user's rights.
// Under a sandbox every process that runs candidate code (its child process, a plugin's probes, a
// Python candidate's interpreter) gets, before that code runs:
//  - rlimits: no core files, files of at most 1 GiB, at most 512 processes (root is exempt from
//    that one: Linux's rule);
//  - no network: a network namespace of its own (nothing but a loopback that is down), and where
//    Landlock has network rules (ABI 4), no TCP bind or connect;
//  - writes only under its own temp dir (and to /dev's character devices): Landlock; an open for
//    writing elsewhere is also named (the seccomp listener below reads its path);
//  - no exec and no socket other than AF_UNIX: seccomp; such a call is stopped and named, the
//    candidate's step crashes with "the sandbox blocked execve". A Python candidate's process is
//    allowed the one exec of its interpreter; later ones and sockets fail there with EPERM, which
//    the candidate's code raises (PermissionError at its line).
// A mechanism the kernel or container forbids is skipped and said so (`unavailable()`), never
// silently. Linux only; nothing of it needs a package.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ds::sandbox {

struct Options {
  std::string writable_dir;  // the only directory the candidate may write under (it exists)
  bool allow_exec = false;   // a Python candidate's run: its process starts the interpreter
};

// Sandbox every candidate process this process starts from now on (nullopt: none). Call from
// the thread that forks them; the run sets it for its duration (Scope).
void configure(std::optional<Options> o);
const std::optional<Options>& configured();

class Scope {
 public:
  explicit Scope(std::optional<Options> o) { configure(std::move(o)); }
  ~Scope() { configure(std::nullopt); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

// In a forked child about to run candidate code: applies what is configured (nothing when
// nothing is). `interpreter`: the child is about to execv(interpreter, ...) a Python candidate's
// interpreter, with this very pointer: that one exec is allowed, no later one. Never throws: a
// mechanism that cannot be set up is skipped and recorded for missing().
void enter_child(const char* interpreter = nullptr);

// In the parent, about its children since the last clear(): the system call the sandbox stopped
// ("execve", "socket(AF_INET)"), or ""; and one line per mechanism a child could not set up
// ("Landlock: not available here (...): writes are not confined"), or "". Children write both to
// a page shared with them (configure() maps it).
std::string blocked_call();
std::string missing();
void clear();

// What the sandbox does, in one line, for the run's header.
inline constexpr const char* kSummary =
    "no network, writes only under its temp dir, no exec or non-AF_UNIX socket, rlimits";

}  // namespace ds::sandbox
