#include "child_candidate.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "launch_log.h"
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
  if (child_ > 0) {
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
    child_ = -1;
  }
}

void ChildCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  cfg_ = cfg;
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0)
    throw std::runtime_error("cannot create pipes for the candidate process");
  std::fflush(nullptr);
  child_ = ::fork();
  if (child_ < 0) throw std::runtime_error("cannot fork the candidate process");
  if (child_ == 0) {
    ::close(down[1]);
    ::close(up[0]);
    to_child_ = up[1];  // in the child: reads down[0], writes up[1]
    from_child_ = down[0];
    // The candidate loads in the child: a device context (CUDA) does not survive a fork, and
    // the weights arrive copy-on-write.
    std::string status = "ok";
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
  if (!recv_msg(from_child_, reply, wire::deadline_in(timeout_s_), &timed_out)) {
    if (timed_out) ::kill(child_, SIGKILL);
    int status = 0;
    ::waitpid(child_, &status, 0);
    child_ = -1;
    throw CandidateCrash(
        "load", timed_out ? fmt::format("hung: load() did not finish within --timeout {} s", timeout_s_)
                : WIFSIGNALED(status) ? fmt::format("killed by signal {} ({}) while loading",
                                                    WTERMSIG(status), strsignal(WTERMSIG(status)))
                                      : std::string("exited while loading"));
  }
  if (reply.rfind("ex", 0) == 0) {
    Reader r{reply};
    r.at = 2;
    const std::string why = r.str();
    stop_child();
    throw std::runtime_error(why);
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
      StepContext ctx{&cfg_, int(r.u64()), int(std::int64_t(r.u64())), int(r.u64()), int(r.u64())};
      TensorMap inputs;
      for (auto n = r.u64(); n--;) {
        std::string name = r.str();
        inputs[name] = r.tensor();
      }
      TensorMap outputs;
      inner_->run(step, ctx, inputs, outputs);
      reply = "ok";
      put_u64(reply, outputs.size());
      for (const auto& [name, t] : outputs) {
        put_str(reply, name);
        put_tensor(reply, t);
      }
      wire::put_launches(reply, launch_log::take());
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
  std::string msg;
  put_str(msg, step.name);
  put_u64(msg, step.inputs.size());
  for (const auto& s : step.inputs) put_str(msg, s);
  put_u64(msg, step.outputs.size());
  for (const auto& s : step.outputs) put_str(msg, s);
  for (int v : {ctx.step, ctx.layer, ctx.pos0, ctx.n_tokens}) put_u64(msg, std::uint64_t(std::int64_t(v)));
  put_u64(msg, inputs.size());
  for (const auto& [name, t] : inputs) {
    put_str(msg, name);
    put_tensor(msg, t);
  }
  bool timed_out = false;
  std::string reply;
  if (!send_msg(to_child_, msg) || !recv_msg(from_child_, reply, wire::deadline_in(timeout_s_), &timed_out)) {
    std::string why;
    if (timed_out) {
      ::kill(child_, SIGKILL);
      why = fmt::format("hung: no answer within --timeout {} s", timeout_s_);
    }
    int status = 0;
    ::waitpid(child_, &status, 0);
    child_ = -1;
    if (why.empty())
      why = WIFSIGNALED(status)
                ? fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
                : fmt::format("exited with status {}", WEXITSTATUS(status));
    throw CandidateCrash(step.name, why);
  }
  Reader r{reply};
  const std::string tag = reply.substr(0, 2);
  r.at = 2;
  if (tag == "ex") throw CandidateCrash(step.name, fmt::format("threw: {}", r.str()));
  for (auto n = r.u64(); n--;) {
    std::string name = r.str();
    outputs[name] = r.tensor();
  }
  for (LaunchRecord& l : r.launches()) launch_log::record(std::move(l));
}

}  // namespace ds
