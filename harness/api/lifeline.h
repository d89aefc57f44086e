// The processes the harness starts die with it, however it ends: a return, an exception, SIGTERM
// or SIGINT, the OOM killer, SIGKILL. Every child (a candidate's process, a plugin probe, the
// build of a bare .cu) is forked through fork_supervised(), which puts a supervisor between the
// harness and the child's work (lifeline.cpp says how, and why that covers everything the child
// starts in turn, compilers that ninja moves into process groups of their own included).
#pragma once

#include <sys/types.h>

namespace ds::lifeline {

// Forks like fork(): -1 on failure, 0 in the child (the worker, which runs the caller's code),
// and in the caller the pid of the worker's supervisor, which is what the caller waits for. It
// exits when the worker does, after killing whatever the worker left running, with the worker's
// own wait status (the same exit code, or death by the same signal). When the caller's process
// dies, the supervisor kills the worker and everything below it.
// Call it from the thread that runs the command (the kernel ties the parent-death signal to the
// forking thread, not to the process).
pid_t fork_supervised();

// Ends a child of fork_supervised() and everything it started, and reaps it: its wait status.
int end_supervised(pid_t pid);

// waitpid() on a child of fork_supervised(): `block` waits for it to end. True when it has ended
// (its status in `status`), false when it runs on. Reap supervisors only through this or
// end_supervised(), so that end_all_now() never signals a pid that is no longer ours.
bool wait_supervised(pid_t pid, int& status, bool block);

// From a signal handler (async-signal-safe): ends every child of fork_supervised() that has not
// been reaped, and waits until each has ended what it started.
void end_all_now();

}  // namespace ds::lifeline
