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
//
// Batches (`run --batch`, docs/batches.md). A candidate whose batches(kind) is true is handed all
// the sequences of a batch in one call per step: StepContext::seqs lists them, and every input is
// the sequences' own tensors stacked in that order:
//   row inputs ("x", "<stage>", "tokens"): sequence i's n_tokens rows start at seqs[i].row0
//                   (ragged: a prefill of 1, 5, 8 and 13 tokens is 27 rows);
//   "cache:<stage>": sequence i's pos0 + n_tokens cache rows start at seqs[i].cache_row0 (the
//                   harness owns the KV cache; each sequence sees only its own);
//   "prev:<stage>": every sequence's state, all of one shape, stacked along dim 0 in that order
//                   (sequence i's is the i-th of n equal parts); a sequence with no state yet
//                   (`fresh`) has zeros there, the state an empty prev: input stands for. Empty
//                   when no sequence has one. seqs[i].state_slot says which slot of an engine's
//                   recurrent-state cache held it (the `ids` map; docs/batches.md, "State slots").
// Every output must be stacked the same way: row stages by rows (dim 0 = the sum of n_tokens),
// a state a later step reads as prev: by sequence (n equal parts of dim 0). A candidate that
// does not batch a block kind is handed the sequences one call each, with `seqs` empty, exactly
// as in a run of one sequence.
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

// One sequence of a batched call: where its rows sit in the stacked inputs and outputs.
struct SeqSpan {
  int seq = 0;         // the sequence's id in the batch (what reports name)
  int row0 = 0;        // its first row in row inputs and outputs
  int n_tokens = 0;    // its rows this step (a decode step: 1)
  int pos0 = 0;        // absolute position of its first row
  int cache_row0 = 0;  // its first row in "cache:" inputs (it has pos0 + n_tokens of them)
  bool fresh = false;  // no recurrent state yet: its part of each prev: input is zeros
  // The recurrent-state slot its prior state was last written to (the `ids` entry of fused GDN /
  // conv decode ops); the call writes sequence i's new state to slot i (rs_head 0). -1 when fresh
  // (a reset: it starts from a zeroed slot). Its state itself is still its part of prev: inputs.
  int state_slot = -1;
  bool operator==(const SeqSpan&) const = default;
};

struct StepContext {
  const ModelConfig* config = nullptr;
  int step = 0;      // model step: 0 is the prefill, 1.. are decode steps
  int layer = 0;     // kModelLayer for embed / head steps
  int pos0 = 0;      // absolute position of the first token of this step (batched: seqs[0]'s)
  int n_tokens = 0;  // tokens in this step (batched: every sequence's, the stacked rows)
  // A batched call: the sequences, in the order their rows are stacked. Empty: one sequence.
  std::vector<SeqSpan> seqs;
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
  // Whether run() takes the sequences of a batch in one call for blocks of `kind` (see
  // "Batches" above). False: the harness serves a batch to it one sequence at a time.
  virtual bool batches(BlockKind /*kind*/) const { return false; }
  // Whether a batched call of `kind` may reduce a sequence's values in another order than a call
  // of that sequence alone (an engine that picks its split-K or tile by the batch's size): the
  // batch invariance check then holds each sequence's outputs within the noise floor of the
  // same sequence run alone instead of bit for bit (docs/batches.md). False: bit for bit.
  virtual bool batch_order_varies(BlockKind /*kind*/) const { return false; }
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
