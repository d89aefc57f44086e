// The phases of a run, in the order runner.cpp's run_parity calls them:
//
//   settle inputs (settle.cpp)  ->  gate (gate_phase.cpp)  ->  load (load.cpp)
//     ->  step loop (step_loop.cpp)  ->  conclude (conclude.cpp)
//
// Each reads and fills the run's RunState; the features plug into them (run_features.h).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "run_state.h"

namespace ds {

// settle inputs: the model's header (with a probe's options), the bounds and selectors checked,
// the GDN variant; into s.header.
ModelConfig settle_header(RunState& s);
// settle inputs, once the candidate is made: its JSON, the prompt (--tokens, a dump's), the
// noise floors' numerics, what the report says of the run's shape.
void settle_candidate(RunState& s, const ModelConfig& header, const Candidate& cand);

// gate: coverage and capability of `cand` (completed by the fill where asked), the baseline made
// and gated, a dump's files checked, the memory budget; all before any weight is read.
void gate_phase(RunState& s, const ModelConfig& header, CandidatePtr& cand);

// What the load phase leaves the step loop.
struct Loaded {
  std::shared_ptr<const Model> model;  // one copy of the weights, shared by every side
  std::unique_ptr<ref::Reference> oracle;
  CandidatePtr cand;                          // loaded (in its child process when isolated)
  std::vector<Lane> lanes;                    // one per mode, each with its noise floor
  std::vector<int> tokens;                    // the prompt fed to every side
  std::set<std::string, std::less<>> cached;  // stages some step reads as "cache:<stage>"
  bool loaded = false;  // false: the candidate or the baseline crashed while loading (s.crash)
};
// load: the weights (a probe's rewrite), the oracle and its weight-completeness gate, the trace
// opened, the candidate and baseline loaded, the lanes and floors made. Not `loaded` when the
// candidate or the baseline crashed while loading (s.crash says which); the caller holds what
// was made until the run concludes.
Loaded load_phase(RunState& s, const ModelConfig& header, CandidatePtr cand);

// step loop: every model step, every layer, every lane; each stage judged and streamed to the
// trace. A crash ends it with s.crash set; a bad dump file is InputError.
void step_loop(RunState& s, Loaded& run);

// conclude: inherited failures marked, verdict, drift, the trace's result written.
RunReport conclude_phase(RunState& s);
// The run has nothing to judge (`why`: a probe's target the model lacks): exit 0, verdict SKIPPED,
// no stage; its trace records it as a stopped run of status skipped.
RunReport skipped_run(RunState& s, const ModelConfig& header, const std::string& why);
// The run stopped before any stage ran: its trace still says so (trace_stub.h). Best effort.
void leave_stopped_trace(RunState& s, const char* status, int exit_code, const std::string& reason);
// A trace write failed (disk full): the trace keeps the rows whose flush succeeded and records
// the failure (trace_commit.h). False when even that record could not be stored.
bool leave_write_failure(RunState& s, const std::string& reason);

}  // namespace ds
