#include "child_candidate.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "launch_log.h"
#include "launch_sinks.h"
#include "lifeline.h"
#include "sandbox.h"
#include "wire.h"

namespace ds {

using wire::put_str;
using wire::put_tensor;
using wire::put_u64;
using wire::Reader;
using wire::recv_msg;
using wire::send_msg;

ChildCandidate::ChildCandidate(CandidatePtr inner, double timeout_s)
    : inner_(std::move(inner)), timeout_s_(timeout_s) {}

ChildCandidate::~ChildCandidate() { stop_child(); }

void ChildCandidate::stop_child() {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  if (child_ > 0) end_child_now();
}

int ChildCandidate::end_child_now() {
  // A child already reaped took what it forked with it (its supervisor ended that first).
  const int status = reaped_ ? reaped_status_ : lifeline::end_supervised(child_);
  child_ = -1;
  reaped_ = false;
  return status;
}

bool ChildCandidate::child_alive() {
  if (!reaped_ && lifeline::wait_supervised(child_, reaped_status_, false)) reaped_ = true;
  return !reaped_;
}

void ChildCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  cfg_ = cfg;
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0)
    throw std::runtime_error("cannot create pipes for the candidate process");
  std::fflush(nullptr);
  // Under a supervisor (lifeline.h): a helper process the candidate forks ends with it, never holds
  // the harness's stdout open past the run, and nothing of it outlives the harness, even a SIGKILL.
  child_ = lifeline::fork_supervised();
  if (child_ < 0) throw std::runtime_error("cannot fork the candidate process");
  if (child_ == 0) {
    ::close(down[1]);
    ::close(up[0]);
    to_child_ = up[1];  // in the child: reads down[0], writes up[1]
    from_child_ = down[0];
    // The candidate loads in the child: a device context (CUDA) does not survive a fork, and
    // the weights arrive copy-on-write.
    std::string status = "ok";
    sandbox::enter_child();
    try {
      inner_->load(cfg, weights);
      launch_log::take();  // what load() launched belongs to no step; a reply carries its step's alone
    } catch (const std::exception& e) {
      status = "ex";
      put_str(status, e.what());
    }
    if (send_msg(to_child_, status) && status == "ok") serve();
    ::_exit(0);
  }
  ::close(down[0]);
  ::close(up[1]);
  to_child_ = down[1];
  from_child_ = up[0];
  ::signal(SIGPIPE, SIG_IGN);
  std::string reply;
  bool timed_out = false;
  // A load that never answers (a driver waiting forever, a kernel spinning at start-up) is a hang
  // like a step's: the same --timeout bounds it.
  std::uint64_t too_long = 0;
  if (!recv_msg(from_child_, reply, wire::deadline_in(timeout_s_), &timed_out, kMaxLoadReply, &too_long,
                [this] { return child_alive(); })) {
    const int status = end_child_now();
    wire::throw_if_sandbox_blocked("load");
    throw CandidateCrash(
        "load", timed_out  ? fmt::format("hung: load() did not finish within --timeout {} s", timeout_s_)
                : too_long ? fmt::format("answered its load with a message of {} bytes", too_long)
                : WIFSIGNALED(status) ? fmt::format("killed by signal {} ({}) while loading",
                                                    WTERMSIG(status), strsignal(WTERMSIG(status)))
                                      : std::string("exited while loading"));
  }
  if (reply.rfind("ex", 0) == 0 || !sandbox::blocked_call().empty()) stop_child();
  wire::throw_if_sandbox_blocked("load");
  if (reply.rfind("ex", 0) == 0) {
    Reader r{reply};
    r.at = 2;
    std::string why;
    try {
      why = r.str();
    } catch (const wire::Malformed& e) {
      why = fmt::format("(an unreadable message: {})", e.what());
    }
    stop_child();
    // The candidate's own code failed: exit 4 like any crash of it, not a bad input.
    throw CandidateCrash("load", fmt::format("threw: {}", why));
  }
  if (reply != "ok") {
    stop_child();
    throw CandidateCrash("load", "answered its load with a malformed message");
  }
}

void ChildCandidate::serve() {
  std::string msg;
  while (recv_msg(from_child_, msg, {}, nullptr)) {
    Reader r{msg};
    std::string reply;
    try {
      KernelStep step;
      step.name = r.str();
      for (auto n = r.u64(); n--;) step.inputs.push_back(r.str());
      for (auto n = r.u64(); n--;) step.outputs.push_back(r.str());
      StepContext ctx{&cfg_, int(r.u64()), int(std::int64_t(r.u64())), int(r.u64()), int(r.u64()), {}};
      ctx.seqs = wire::read_seqs(r);
      TensorMap inputs;
      for (auto n = r.u64(); n--;) {
        std::string name = r.str();
        inputs[name] = r.tensor();
      }
      TensorMap outputs;
      launch_sinks::begin_step(step.name);
      struct StepEnd {
        ~StepEnd() { launch_sinks::end_step(); }
      } step_end;
      inner_->run(step, ctx, inputs, outputs);
      launch_sinks::end_step();  // before the records are taken: a bad free in its cleanup is the step's
      reply = "ok";
      put_u64(reply, outputs.size());
      for (const auto& [name, t] : outputs) {
        put_str(reply, name);
        put_tensor(reply, t);
      }
      wire::put_launches(reply, launch_log::take());
      wire::put_live_allocations(reply, launch_sinks::live_step_allocations());
    } catch (const std::exception& e) {
      reply = "ex";
      put_str(reply, e.what());
    }
    if (!send_msg(to_child_, reply)) break;
  }
}

void ChildCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                         TensorMap& outputs) {
  if (child_ <= 0) throw CandidateCrash(step.name, "the candidate process is not running");
  const std::string msg = wire::step_request(step, ctx, inputs);
  bool timed_out = false;
  std::string reply;
  const std::uint64_t max_elems = wire::max_step_output_elems(cfg_, ctx);
  // Every declared output at its largest, in the widest dtype, plus names and launch records.
  const std::uint64_t max_reply = step.outputs.size() * (max_elems * 8 + 4096) + (std::uint64_t(1) << 24);
  std::uint64_t too_long = 0;
  if (!send_msg(to_child_, msg) || !recv_msg(from_child_, reply, wire::deadline_in(timeout_s_), &timed_out,
                                             max_reply, &too_long, [this] { return child_alive(); })) {
    const bool dead = !timed_out && !too_long;
    const int status = end_child_now();
    wire::throw_if_sandbox_blocked(step.name);
    throw CandidateCrash(
        step.name,
        timed_out ? fmt::format("hung: no answer within --timeout {} s", timeout_s_)
        : too_long
            ? fmt::format("sent a reply of {} bytes, more than the {} its {} declared outputs can fill",
                          too_long, max_reply, step.outputs.size())
        : dead && WIFSIGNALED(status)
            ? fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
            : fmt::format("exited with status {}", WEXITSTATUS(status)));
  }
  wire::StepReply got;
  try {
    got = wire::read_step_reply(reply, step.outputs, max_elems);
  } catch (const wire::Malformed& e) {
    // The harness took nothing of it; the process that sent it is not trusted with another step.
    end_child_now();
    throw CandidateCrash(step.name, fmt::format("sent a malformed reply: {}", e.what()));
  }
  // A forbidden call stopped: the step's outputs, if any, came from a candidate that tried it.
  wire::throw_if_sandbox_blocked(step.name);
  if (got.threw) throw CandidateCrash(step.name, fmt::format("threw: {}", got.error));
  for (auto& [name, t] : got.outputs) outputs[name] = std::move(t);
  for (LaunchRecord& l : got.launches) launch_log::record(std::move(l));
  launch_log::set_live_allocations(std::move(got.live));
}

}  // namespace ds
