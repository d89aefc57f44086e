// Length-prefixed messages between the harness and a forked child (the candidate's process,
// a plugin probe): the child may crash, hang or lie, so every read is bounded and checked, and a
// child runs in a process group of its own that ends with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "candidate.h"
#include "launch_log.h"
#include "tensor.h"

namespace ds::wire {

using Deadline = std::chrono::steady_clock::time_point;  // a zero time_point: no deadline
Deadline deadline_in(double seconds);                    // <= 0: none

// A message longer than this is a corrupt length prefix, whatever the model.
inline constexpr std::uint64_t kMaxMessage = std::uint64_t(1) << 40;

// What a child sent that the harness cannot take: the child's failure, never the harness's.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool send_msg(int fd, const std::string& msg);
// Reads one message. Its length may claim up to `max_bytes`; a longer claim returns false with
// `*too_long` set to it. The buffer grows only as bytes arrive, so a lying length costs nothing.
// `alive`, if given, is asked every 100 ms of waiting: false ends the wait (the sender died, though
// something it forked may still hold the pipe open).
bool recv_msg(int fd, std::string& msg, Deadline deadline, bool* timed_out,
              std::uint64_t max_bytes = kMaxMessage, std::uint64_t* too_long = nullptr,
              const std::function<bool()>& alive = {});

void put_u64(std::string& buf, std::uint64_t v);
void put_str(std::string& buf, const std::string& s);
void put_tensor(std::string& buf, const Tensor& t);
void put_launches(std::string& buf, const std::vector<LaunchRecord>& launches);
void put_live_allocations(std::string& buf, const std::vector<LiveAllocation>& live);
// A batched step's sequences (StepContext::seqs; empty for one sequence).
void put_seqs(std::string& buf, const std::vector<SeqSpan>& seqs);

// One step's request to a candidate's process: its name, inputs and outputs, the context and the
// input tensors. ChildCandidate's child reads it, and so does a Python candidate's process
// (python/driftscope/_host.py, run_step).
std::string step_request(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs);

// The most elements one output of a step at `ctx` may have in this model: a reply claiming more
// is refused before anything is allocated for it.
std::uint64_t max_step_output_elems(const ModelConfig& cfg, const StepContext& ctx);

// Reads what put_* wrote; throws Malformed on a truncated or malformed message.
struct Reader {
  const std::string& buf;
  std::size_t at = 0;
  std::uint64_t u64();
  std::string str();
  // A tensor of at most `max_elems` elements (its shape is checked before anything is allocated).
  Tensor tensor(std::uint64_t max_elems = kMaxMessage);
  std::vector<LaunchRecord> launches();
  std::vector<LiveAllocation> live_allocations();
};
// What put_seqs wrote; more sequences than the message can hold is Malformed.
std::vector<SeqSpan> read_seqs(Reader& r);

// A candidate process's answer to one step: its outputs and launch records, or the message of
// what it threw. read_step_reply() takes nothing it cannot check: a tag other than "ok"/"ex", more
// outputs than `declared`, a name not declared, a tensor over `max_elems` elements or trailing
// bytes are Malformed.
struct StepReply {
  bool threw = false;
  std::string error;  // what it threw
  TensorMap outputs;
  std::vector<LaunchRecord> launches;
  // The blocks steps allocated and had not freed when this one ended (optional at the end of the
  // reply: a process that sends none reports none).
  std::vector<LiveAllocation> live;
};
StepReply read_step_reply(const std::string& reply, const std::vector<std::string>& declared,
                          std::uint64_t max_elems);

// A child under the sandbox (sandbox.h) made a call it forbids: CandidateCrash(step) naming it.
void throw_if_sandbox_blocked(const std::string& step);

// Runs `fn` in a forked child (under the sandbox, when one is configured) and returns what it returned. The
// child's death by a signal, an exit without an answer, or no answer before `timeout_s` (> 0) throws
// CandidateCrash(step, why); an exception in `fn` throws CandidateCrash(step, "threw: ..."). The harness's
// memory is untouched whatever `fn` does.
std::string run_forked(const std::string& step, double timeout_s, const std::function<std::string()>& fn);

}  // namespace ds::wire
