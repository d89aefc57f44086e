// Why every process below the harness dies with it, always:
//
// The harness can be ended by a signal it cannot catch (SIGKILL, the OOM killer), so nothing it
// runs at its own end can be relied on. What the kernel does on its own when the harness dies is
// PR_SET_PDEATHSIG: a signal to each child that set it. That reaches the harness's own children
// only: the setting is cleared in a fork, and what a child starts (a plugin's helper, the ninja
// that cmake runs, the compilers that ninja runs in process groups of their own) is not reached by
// it, nor by a kill of the child's process group. So each child is two processes:
//
//   harness -> supervisor -> worker -> (whatever the worker starts)
//
// - The supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever is started below it,
//   however deep, in whatever process group or session, stays below it when its own parent dies
//   (an orphan is re-parented to the nearest subreaper above it, not to init). "Everything the
//   worker started" is therefore exactly "every process below the supervisor", found in /proc.
// - The supervisor's parent-death signal is SIGTERM, which it waits for (blocked, in
//   sigwaitinfo): when the harness dies, by any means, the kernel wakes it, and it SIGKILLs every
//   process below it until none is left (killed processes fork no more; their orphans come to it).
//   It runs no candidate code and holds no file of the harness's, so no candidate can stop it.
// - The worker's parent-death signal is SIGKILL: it dies if the supervisor does.
// - The race: a parent that dies between fork() and prctl() sends nothing, so each checks
//   getppid() against the pid it was forked from after setting the signal.
// - The supervisor exits when the worker does, after ending what the worker left, with the
//   worker's own wait status: the caller reads the worker's fate from the pid it was given.
#include "lifeline.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ds::lifeline {

namespace {

// The supervisors not yet reaped, for end_all_now() (lock-free: read from a signal handler).
constexpr int kSlots = 64;
std::atomic<pid_t> g_live[kSlots];

void remember(pid_t pid) {
  for (auto& slot : g_live) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
  // All taken: this one still dies with the harness, only not before a handler's cleanup.
}

void forget(pid_t pid) {
  for (auto& slot : g_live) {
    pid_t p = pid;
    if (slot.compare_exchange_strong(p, 0)) return;
  }
}

// What the supervisor waits for: its worker's end (SIGCHLD), the harness's death (SIGTERM, its
// parent-death signal) and a request to end everything (SIGTERM from end_supervised(); SIGINT and
// SIGHUP from anyone else mean the same).
sigset_t supervisor_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&s, sig);
  return s;
}

// Every process below `self`, from the parent pids in /proc.
std::vector<pid_t> descendants(pid_t self) {
  std::unordered_multimap<pid_t, pid_t> children;
  if (DIR* d = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      char path[64], stat[512];
      std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
      FILE* f = std::fopen(path, "r");
      if (!f) continue;
      const std::size_t n = std::fread(stat, 1, sizeof stat - 1, f);
      std::fclose(f);
      stat[n] = '\0';
      // "pid (comm) state ppid ...": the command may hold any byte, ')' included.
      const char* close = std::strrchr(stat, ')');
      char state = 0;
      int ppid = 0;
      if (close && std::sscanf(close + 1, " %c %d", &state, &ppid) == 2) children.emplace(ppid, pid_t(pid));
    }
    ::closedir(d);
  }
  std::vector<pid_t> below;
  std::unordered_set<pid_t> seen = {self};  // stat files read at different times may disagree
  std::vector<pid_t> todo = {self};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    const auto [from, to] = children.equal_range(p);
    for (auto it = from; it != to; ++it) {
      if (!seen.insert(it->second).second) continue;
      below.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return below;
}

// Kills every process below the supervisor and reaps them; `status` gets the worker's wait status
// if it is reaped here. Ends when the supervisor has no child left, hence nothing below it.
void end_everything_below(pid_t worker, int& status) {
  for (;;) {
    for (pid_t p : descendants(::getpid())) ::kill(p, SIGKILL);
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) return;  // ECHILD
    if (p == worker) status = st;
  }
}

// Ends the supervisor as its worker ended: the same exit code, or the same signal (without a core
// of its own: the worker's, if any, is the one that tells).
[[noreturn]] void exit_as(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

void close_all_files() {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return;
#endif
  for (int fd = 0; fd < 4096; ++fd) ::close(fd);
}

[[noreturn]] void supervise(pid_t caller, pid_t worker, const sigset_t& watched) {
  // The harness's pipes are the worker's alone: a reply pipe ends when the worker's side does.
  close_all_files();
  int status = 0;
  bool running = worker > 0;
  if (worker < 0) status = 127 << 8;  // no worker: "exited with status 127"
  while (running && ::getppid() == caller) {
    siginfo_t info;
    const int sig = ::sigwaitinfo(&watched, &info);
    if (sig == SIGCHLD) {
      int st = 0;
      for (pid_t p; (p = ::waitpid(-1, &st, WNOHANG)) > 0;)
        if (p == worker) status = st, running = false;
    } else if (sig > 0) {
      break;
    }
  }
  end_everything_below(worker, status);
  exit_as(status);
}

}  // namespace

pid_t fork_supervised() {
  const pid_t caller = ::getpid();
  const sigset_t watched = supervisor_signals();
  // Blocked before the fork, so that none of them is lost before the supervisor waits for it.
  sigset_t caller_mask;
  ::pthread_sigmask(SIG_BLOCK, &watched, &caller_mask);
  struct sigaction caller_chld {};
  ::sigaction(SIGCHLD, nullptr, &caller_chld);
  char caller_name[16] = {};
  ::prctl(PR_GET_NAME, caller_name);
  const pid_t supervisor = ::fork();
  if (supervisor != 0) {
    ::pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    if (supervisor > 0) {
      ::setpgid(supervisor, supervisor);  // both sides set it: it exists before either goes on
      remember(supervisor);
    }
    return supervisor;
  }
  // A process group of its own: the terminal's Ctrl-C and a kill of the harness's group reach the
  // harness alone, whose death then ends everything here in order.
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, "ds-supervisor");
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::signal(SIGCHLD, SIG_DFL);  // a caller ignoring SIGCHLD would have its children reaped unseen
  const pid_t self = ::getpid();
  const pid_t worker = ::getppid() == caller ? ::fork() : -1;  // the caller is gone: start nothing
  if (worker == 0) {
    // Its own group too: a candidate that kills its process group does not kill its supervisor.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) ::raise(SIGKILL);
    ::prctl(PR_SET_NAME, caller_name);
    ::sigaction(SIGCHLD, &caller_chld, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    return 0;
  }
  supervise(caller, worker, watched);
}

bool wait_supervised(pid_t pid, int& status, bool block) {
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, block ? 0 : WNOHANG);
    if (got == 0) return false;
    if (got < 0 && errno == EINTR) continue;
    // Reaped, or reaped already (by end_all_now() in a handler): either way it has ended.
    forget(pid);
    return true;
  }
}

int end_supervised(pid_t pid) {
  ::kill(pid, SIGTERM);
  int status = 0;
  wait_supervised(pid, status, true);
  return status;
}

void end_all_now() {
  for (auto& slot : g_live)
    if (const pid_t p = slot.load(); p > 0) ::kill(p, SIGTERM);
  for (auto& slot : g_live) {
    if (const pid_t p = slot.exchange(0); p > 0) {
      int status = 0;
      while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

}  // namespace ds::lifeline
