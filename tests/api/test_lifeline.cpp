// The processes the harness starts die with it (lifeline.h): a supervised child's wait status is
// its worker's, what the worker starts ends with it, and a SIGKILL of the process that forked it
// ends the worker and the helpers it moved into sessions of their own.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lifeline.h"

namespace ds {
namespace {

// Whether `pid` runs (a zombie has ended).
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

bool ends_within(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

[[noreturn]] void spin() {
  for (;;) __asm__ volatile("");  // a full core, never optimised away
}

// Forks a helper into a session of its own (as ninja moves its compilers out of its group) that
// spins, and writes its pid to `fd`.
void start_escaped_helper(int fd) {
  const pid_t helper = ::fork();
  if (helper == 0) {
    ::setsid();
    spin();
  }
  if (::write(fd, &helper, sizeof helper) != sizeof helper) ::_exit(90);
}

// A worker that writes its pid and its helper's to `fd`, then spins beside it.
[[noreturn]] void spin_beside_a_helper(int fd) {
  const pid_t self = ::getpid();
  if (::write(fd, &self, sizeof self) != sizeof self) ::_exit(90);
  start_escaped_helper(fd);
  spin();
}

// The pids the processes under test report on a pipe; whichever still runs at the end is killed,
// so that a failing test leaves nothing on the machine.
class Reported {
 public:
  Reported() {
    if (::pipe(fd_) != 0) std::abort();
  }
  ~Reported() {
    for (pid_t p : pids_)
      if (alive(p)) ::kill(p, SIGKILL);
  }
  int write_end() const { return fd_[1]; }
  // In the test's process, after the fork: the first `n` pids written.
  const std::vector<pid_t>& read(int n) {
    ::close(fd_[1]);
    for (int i = 0; i < n; ++i) {
      pid_t p = 0;
      if (::read(fd_[0], &p, sizeof p) != sizeof p) break;
      pids_.push_back(p);
    }
    ::close(fd_[0]);
    return pids_;
  }

 private:
  int fd_[2] = {-1, -1};
  std::vector<pid_t> pids_;
};

struct StatusCase {
  const char* name;
  std::function<void()> worker;  // never returns
  std::function<bool(int)> status_is;
};
void PrintTo(const StatusCase& c, std::ostream* os) { *os << c.name; }

class SupervisedStatus : public testing::TestWithParam<StatusCase> {};

TEST_P(SupervisedStatus, IsTheWorkers) {
  const pid_t pid = lifeline::fork_supervised();
  ASSERT_GE(pid, 0);
  if (pid == 0) GetParam().worker();
  int status = 0;
  ASSERT_TRUE(lifeline::wait_supervised(pid, status, true));
  EXPECT_TRUE(GetParam().status_is(status)) << "wait status " << status;
}

INSTANTIATE_TEST_SUITE_P(
    Lifeline, SupervisedStatus,
    testing::Values(
        StatusCase{"exit_0", [] { ::_exit(0); }, [](int s) { return WIFEXITED(s) && WEXITSTATUS(s) == 0; }},
        StatusCase{"exit_3", [] { ::_exit(3); }, [](int s) { return WIFEXITED(s) && WEXITSTATUS(s) == 3; }},
        StatusCase{"segv",
                   [] {
                     ::signal(SIGSEGV, SIG_DFL);
                     ::raise(SIGSEGV);
                     ::_exit(0);
                   },
                   [](int s) { return WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV; }},
        StatusCase{"killed",
                   [] {
                     ::raise(SIGKILL);
                     ::_exit(0);
                   },
                   [](int s) { return WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL; }}),
    [](const testing::TestParamInfo<StatusCase>& i) { return std::string(i.param.name); });

TEST(Lifeline, WhatTheWorkerStartedEndsWithIt) {
  Reported reported;
  const pid_t pid = lifeline::fork_supervised();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    start_escaped_helper(reported.write_end());
    ::_exit(0);
  }
  const std::vector<pid_t>& helper = reported.read(1);
  ASSERT_EQ(helper.size(), 1u);
  int status = 0;
  ASSERT_TRUE(lifeline::wait_supervised(pid, status, true));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(alive(helper[0])) << "the helper outlived its worker";
}

TEST(Lifeline, EndSupervisedEndsTheWorkerAndItsHelpers) {
  Reported reported;
  const pid_t pid = lifeline::fork_supervised();
  ASSERT_GE(pid, 0);
  if (pid == 0) spin_beside_a_helper(reported.write_end());
  const std::vector<pid_t>& spinning = reported.read(2);
  ASSERT_EQ(spinning.size(), 2u);
  const int status = lifeline::end_supervised(pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_TRUE(ends_within(spinning, std::chrono::seconds(0)));
}

// The harness here is a process of the test's, killed by a signal no handler sees.
TEST(Lifeline, EverythingEndsWhenTheHarnessIsKilled) {
  Reported reported;
  const pid_t harness = ::fork();
  ASSERT_GE(harness, 0);
  if (harness == 0) {
    if (lifeline::fork_supervised() == 0) spin_beside_a_helper(reported.write_end());
    for (;;) ::pause();
  }
  const std::vector<pid_t>& spinning = reported.read(2);
  ASSERT_EQ(spinning.size(), 2u);
  EXPECT_TRUE(alive(spinning[0]) && alive(spinning[1]));
  ::kill(harness, SIGKILL);
  int status = 0;
  ::waitpid(harness, &status, 0);
  EXPECT_TRUE(ends_within(spinning, std::chrono::seconds(5)))
      << "the worker or its helper outlived the harness";
}

}  // namespace
}  // namespace ds
