// The Candidate interface: what a backend under test implements.
//
// A candidate describes each block kind as a list of KernelSteps (its stage map). A step is
// one launch or fused group: it names the tensors it consumes and the catalog stages it
// produces (a fused QKV step produces q, k and v). The harness resolves every input from
// the reference (isolated mode: local error) or from the candidate's own earlier outputs
// (chained mode: accumulated error), calls `run`, and compares each output with the
// reference stage of the same name.
//
// Input names a step may use:
//   "x"             the layer input (for layer 0: embed; for the head: the last residual_2)
//   "<stage>"       a stage of the same layer and model step, e.g. "attn_norm"
//   "cache:<stage>" that stage's rows for every position so far, current step included
//                   (the KV cache: "cache:k_rope", "cache:v")
//   "prev:<stage>"  that stage of the same layer at the previous model step (recurrent
//                   state); an empty Tensor before the first step
//   "tokens"        the token ids of this step (i32 [T])
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.h"
#include "model_config.h"
#include "ops.h"
#include "tensor.h"
#include "weights.h"

namespace ds {

using TensorMap = std::map<std::string, Tensor, std::less<>>;

struct KernelStep {
  std::string name;                  // the candidate's own name for the launch, e.g. "fused_qkv"
  std::vector<std::string> inputs;   // see the naming rules above
  std::vector<std::string> outputs;  // catalog stage names
};

struct StepContext {
  const ModelConfig* config = nullptr;
  int step = 0;      // model step: 0 is the prefill, 1.. are decode steps
  int layer = 0;     // kModelLayer for embed / head steps
  int pos0 = 0;      // absolute position of the first token of this step
  int n_tokens = 0;  // tokens in this step
};

// What a candidate's mixture-of-experts kernels can serve beyond the ops they declare: the largest
// top-k (experts chosen per token) and expert count; 0 means no limit. The capability gate refuses
// a MoE model past either by name, as it does a missing op (a kernel with a fixed-size top-k
// array would otherwise run past it).
struct MoeLimits {
  int max_top_k = 0;
  int max_experts = 0;
};

class Candidate {
 public:
  virtual ~Candidate() = default;

  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // The dtype activations are stored in between steps; inputs are handed over in it.
  virtual DType storage_dtype() const = 0;
  virtual OpSet capabilities() const = 0;
  virtual MoeLimits moe_limits() const { return {}; }
  // Empty when the candidate can run on this machine; otherwise why not ("no CUDA device: ...").
  // The gate answers UNAVAILABLE with it before anything is loaded. Asked in a forked child, so
  // it may initialise a device runtime without the harness ever holding a device context.
  virtual std::string unavailable() const { return {}; }
  // The stage map of one block kind for this model.
  virtual std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const = 0;
  // Called once, after the gates pass: convert and "upload" the weights. `weights` stays alive
  // and unchanged until the candidate is destroyed or loaded again, so a candidate whose device
  // memory is host memory (simt) may read them in place instead of copying.
  virtual void load(const ModelConfig& cfg, const WeightStore& weights) = 0;
  // Runs one step; must fill every name in step.outputs (a missing one stops the run as crashed).
  virtual void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                   TensorMap& outputs) = 0;
};

using CandidatePtr = std::unique_ptr<Candidate>;

// The candidate died, hung or broke its contract while running `step_name`: the harness records
// the stage as crashed and stops that run (exit 4), keeping everything judged before.
struct CandidateCrash : std::runtime_error {
  CandidateCrash(std::string step, std::string why) : std::runtime_error(why), step_name(std::move(step)) {}
  std::string step_name;
};

}  // namespace ds
