// Batch invariance and the cross-sequence leak check (docs/batches.md, "Batch invariance and
// leaks"). After the candidate ran one kernel step on a batch, the same step runs again on the
// same inputs:
//   invariance  each sequence alone (a plain call, as a run of one sequence makes): its outputs
//               must equal, bit for bit, its part of the batched outputs (within the stage's
//               noise floor where the candidate declares a batch-dependent reduction order,
//               Candidate::batch_order_varies);
//   leak        with one sequence's inputs perturbed, each sequence in turn: every other
//               sequence's part of the outputs must not move.
// A step checked this way localises a batched bug to the kernel step, the stage, the sequence and
// the element, whatever the oracle says of the values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "candidate.h"
#include "result.h"

namespace ds {

// Which checks a batch run makes (`--batch-checks`).
struct BatchChecks {
  bool invariance = true;
  bool leak = true;
  bool any() const { return invariance || leak; }
};
// "all", "none", or a comma-separated list of "invariance" and "leak"; throws InputError naming
// the flag and the bad entry.
BatchChecks parse_batch_checks(const std::string& spec);

// What a check found at one stage of one sequence: a status (`leak`, `batch-variant`) and why.
struct BatchFinding {
  Status status;
  std::string note;
};
// (sequence id, stage) -> the first finding there.
using BatchFindings = std::map<std::pair<int, std::string>, BatchFinding, std::less<>>;

// One batched call of a kernel step, as the checks replay it.
struct BatchCall {
  const KernelStep& step;
  const StepContext& ctx;
  const TensorMap& inputs;                           // the stacked inputs it was handed
  const TensorMap& outputs;                          // what it returned
  const std::vector<TensorMap>& alone;               // each sequence's own inputs, in ctx.seqs order
  const std::set<std::string, std::less<>>& states;  // stages read as prev: (split per sequence)
  // An index input stays a valid index when perturbed: it moves to the next one within its range.
  std::function<std::int64_t(const std::string& input)> index_range;  // 0: not an index
  // The candidate declares a batch-dependent reduction order for this block kind: a sequence's
  // batched and alone outputs may differ by up to `floor_limit` (of sequence i, stage), the most a
  // correct order moves that stage (k x its noise floor); NaN where none is recorded (bit for bit).
  bool order_varies = false;
  std::function<double(std::size_t i, const std::string& stage)> floor_limit;
};

// Runs the checks `which` asks for on `call` and adds what they find to `found`. The extra
// calls' kernel launches are dropped (they belong to no stage). A crash in them is the
// candidate's, as in any step.
void check_batch_call(Candidate& cand, const BatchCall& call, BatchChecks which, BatchFindings& found);

}  // namespace ds
