// `run --batch` (docs/batches.md): the candidate is fed every sequence of a batch at once
// (prefill ragged, decode batched) while the reference computes each sequence alone; every stage
// is judged per sequence. One component with a hook in each phase it changes (run_features.h);
// the step loop itself runs a run of one sequence as a batch of one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "batch_checks.h"
#include "batch_spec.h"
#include "candidate.h"
#include "model_config.h"

namespace ds {

struct RunState;

class BatchFeature {
 public:
  // settle (header): the spec parsed from --batch / --batch-prompts, the flags a batch run cannot
  // take refused, the steps and positions the longest sequence needs checked against the model.
  void settle(RunState& s, const ModelConfig& header);
  // settle (candidate): a dump (recorded tensors of one sequence) cannot be batched.
  void check_candidate(const RunState& s, const Candidate& cand) const;
  bool active() const { return spec_.active(); }
  const BatchSpec& spec() const { return spec_; }
  // step loop: the checks each batched kernel step gets (batch_checks.h).
  BatchChecks checks() const { return checks_; }
  // load: which block kinds the candidate takes batched and which the harness serves it one
  // sequence at a time (Candidate::batches), for the trace and the report.
  // Noted in the report too, in one line.
  void note_candidate(RunState& s, const ModelConfig& cfg, const Candidate& cand);
  // The prompt of sequence `seq` (its given ids, else drawn from the seed and its index) and of
  // its prefix (`start` positions before the batch).
  std::vector<int> prompt(int seq, const ModelConfig& cfg, std::uint64_t seed, int first_token) const;
  std::vector<int> prefix(int seq, const ModelConfig& cfg, std::uint64_t seed, int first_token) const;
  // The trace's run JSON "batch" (null without a batch).
  nlohmann::json json() const;

 private:
  BatchSpec spec_;
  BatchChecks checks_;
  std::map<std::string, std::string> served_;  // block kind -> "batched" | "per-sequence"
  std::vector<std::string> order_varies_;      // block kinds batched in a batch-dependent order
};

}  // namespace ds
