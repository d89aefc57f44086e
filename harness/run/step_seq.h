// The step loop's view of one sequence (step_loop.cpp): what the reference computes of it alone,
// each lane's history of it, what one of its blocks is held to, and the MoE near-tie settling that
// can change what that is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "candidate.h"
#include "reference.h"
#include "run_state.h"

namespace ds {

// The values of `x` once stored in `t`, kept as f64 (what the floor reference consumes).
inline Tensor round_values(const Tensor& x, DType t) { return x.to(t).to(DType::f64); }

// One sequence of the run: what the reference computes of it alone, and each lane's history of it.
struct Seq {
  int id = 0;
  std::vector<int> prompt;
  int decode_steps = 0;
  int join = 0;  // the model step of its prefill (a batch file's `join`)
  int pos = 0;   // positions before this step (the KV cache rows so far)
  std::unique_ptr<ref::Reference> own_oracle;
  ref::Reference* oracle = nullptr;
  std::vector<Lane> lanes;  // one per mode, as run.lanes
  StageHistory ref_cache, ref_prev, ref_latest;
  std::vector<int> fed;  // tokens fed so far (prompt, then each greedy next token)
  // This step: its tokens, and the block being run.
  int T = 0;
  Tensor tok;
  Tensor ref_x;                         // the reference's input to the block
  TensorMap ref;                        // the reference's stages of the block
  std::vector<TensorMap> floor_stages;  // per lane, the noise floor's
  // Per lane: what a lane with its own oracle (Lane::own_oracle, after a MoE near-tie) is held to
  // instead of `ref`, and that oracle's input to the block.
  std::vector<TensorMap> own_ref;
  std::vector<Tensor> own_ref_x;
  // This step's recurrent-state slot it reads (-1: none, a reset), as BatchSpec::slot_plan says.
  int state_slot = -1;
  bool active(int step) const { return step >= join && step <= join + decode_steps; }
};

// One block of one lane: each sequence's produced stages.
using SeqOutputs = std::vector<TensorMap>;

// What one sequence's block in one lane is held to and its isolated steps are fed.
struct BlockInputs {
  const TensorMap* ref;    // the reference's stages of this block
  const TensorMap* floor;  // the noise floor's
  const Tensor* ref_x;     // the reference's input to the block
};

// The reference and floor stages of a MoE layer given other expert ids, and the inputs over them.
struct TieInputs {
  TensorMap ref, floor;
  BlockInputs inputs;
  TieInputs(TensorMap r, TensorMap f, const BlockInputs& in)
      : ref(std::move(r)), floor(std::move(f)), inputs{&ref, &floor, in.ref_x} {}
  TieInputs(const TieInputs&) = delete;
};

// Where the candidate's expert_ids for a sequence differ from the oracle's only at near-ties of
// the oracle's router logits (moe_ties.h): notes each such row and returns the oracle's (and the
// noise floor's) stages given the candidate's choice; nullptr where nothing changes. The floor's
// own choice is brought to the judged one too, so a flip of the floor itself never widens a
// tolerance.
std::unique_ptr<TieInputs> settle_moe_tie(RunState& s, const ModelConfig& cfg, DType storage, int step,
                                          int layer, Seq& q, std::size_t li, const BlockInputs& in,
                                          const Tensor& cand_ids);

}  // namespace ds
