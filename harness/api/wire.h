// Length-prefixed messages between the harness and a forked child (the candidate's process,
// a plugin probe): the child may crash, hang or lie, so every read is bounded and checked.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "launch_log.h"
#include "tensor.h"

namespace ds::wire {

using Deadline = std::chrono::steady_clock::time_point;  // a zero time_point: no deadline
Deadline deadline_in(double seconds);                    // <= 0: none

bool send_msg(int fd, const std::string& msg);
bool recv_msg(int fd, std::string& msg, Deadline deadline, bool* timed_out);

void put_u64(std::string& buf, std::uint64_t v);
void put_str(std::string& buf, const std::string& s);
void put_tensor(std::string& buf, const Tensor& t);
void put_launches(std::string& buf, const std::vector<LaunchRecord>& launches);

// Reads what put_* wrote; throws std::runtime_error on a truncated or malformed message.
struct Reader {
  const std::string& buf;
  std::size_t at = 0;
  std::uint64_t u64();
  std::string str();
  Tensor tensor();
  std::vector<LaunchRecord> launches();
};

// Runs `fn` in a forked child and returns what it returned. The child's death by a signal, an
// exit without an answer, or no answer before `timeout_s` (> 0) throws CandidateCrash(step,
// why); an exception in `fn` throws CandidateCrash(step, "threw: ..."). The harness's memory is
// untouched whatever `fn` does.
std::string run_forked(const std::string& step, double timeout_s, const std::function<std::string()>& fn);

}  // namespace ds::wire
