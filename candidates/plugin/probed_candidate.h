// A candidate whose code runs only in other processes (a plugin's library, a Python candidate's
// interpreter): what it declares before load() is read once, in a probe, over the wire format
// (wire.h), and answered from here; its plans likewise, per model configuration.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "candidate.h"
#include "wire.h"

namespace ds {

void put_strings(std::string& buf, const std::vector<std::string>& v);
std::vector<std::string> read_strings(wire::Reader& r);

// A probe's answer comes from a process that ran the candidate's code, which may have scribbled
// on it: what does not parse is that candidate's crash (exit 4), never the harness's.
template <class Read>
auto read_answer(const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const wire::Malformed& e) {
    throw CandidateCrash(what, fmt::format("sent a malformed answer: {}", e.what()));
  }
}

// The block kinds a probe plans at once for `cfg` (a probe is a process start: all of them in one),
// `also` among them.
std::vector<BlockKind> plan_kinds(const ModelConfig& cfg, BlockKind also);
// A probe's plans: per block kind, its steps. Malformed when `wanted` has none.
using Plans = std::map<BlockKind, std::vector<KernelStep>>;
Plans read_plans(wire::Reader& r, BlockKind wanted);

// What every probe of candidate code answers in the same order: the ops, why it cannot run here,
// the batched and order-varying block kinds (a bit each) and the MoE limits. `unknown_op` is called
// for an op no driftscope knows (to throw; when it returns, the op is left out).
struct ProbedTraits {
  OpSet caps;
  std::string unavailable;
  std::uint64_t batched_kinds = 0;       // bit k: batches(BlockKind(k))
  std::uint64_t order_varies_kinds = 0;  // bit k: batch_order_varies(BlockKind(k))
  MoeLimits moe_limits;
};
ProbedTraits read_traits(wire::Reader& r, const std::function<void(const std::string& op)>& unknown_op);

class ProbedCandidate : public Candidate {
 public:
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DType storage_dtype() const override { return storage_; }
  OpSet capabilities() const override { return caps_; }
  std::string unavailable() const override { return unavailable_; }
  bool batches(BlockKind kind) const override { return (batched_kinds_ >> unsigned(kind)) & 1u; }
  bool batch_order_varies(BlockKind kind) const override {
    return (order_varies_kinds_ >> unsigned(kind)) & 1u;
  }
  MoeLimits moe_limits() const override { return moe_limits_; }

 protected:
  void set_traits(ProbedTraits t);
  // The plan of `kind` for `cfg`, from `probe` (which answers the kinds asked for) the first time a
  // configuration is asked for; `what` names the probe in a crash.
  std::vector<KernelStep> cached_plan(
      const ModelConfig& cfg, BlockKind kind,
      const std::function<std::string(const std::vector<BlockKind>&)>& probe) const;

  std::string name_, description_;
  DType storage_ = DType::f32;
  OpSet caps_;
  std::string unavailable_;
  std::uint64_t batched_kinds_ = 0;       // bit k: batches(BlockKind(k))
  std::uint64_t order_varies_kinds_ = 0;  // bit k: batch_order_varies(BlockKind(k))
  MoeLimits moe_limits_;

 private:
  mutable std::string plans_key_;
  mutable Plans plans_;
};

// The configuration as JSON: every field of ModelConfig by its C++ name, enums by their names. What
// a Python candidate reads (driftscope.Config), and the key plans are cached under: every field a
// plan may depend on.
std::string config_json(const ModelConfig& c);

}  // namespace ds
