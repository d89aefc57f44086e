// Writes synthetic traces with TraceWriter for the viewer tests: any number of layers and
// stages, chosen failing and NaN cells, small stored tensors.
#pragma once

#include <string>

namespace ds::view::testing {

struct FixtureSpec {
  int layers = 4, stages = 5, steps = 1;
  int fail_layer = 2, fail_stage = 3;      // this cell and the later chained ones fail
  int nan_layer = -2;                      // a layer whose chained stage 0 holds a NaN; -2: none
  bool drift_start = true;                 // store "drift_start_layer" in the result JSON
  bool floors = false;                     // store noise floors (floor_max_abs, floor_mean_abs)
  std::string candidate = "fixture-cand";  // tells apart the cases of a merged file
  std::string baseline;                    // non-empty: the run was judged against this candidate
  std::string probe;                       // non-empty: the run's --probe
  bool chained = true;                     // false: an isolated-only run (no chained rows)
  double chained_growth = 1;               // passing chained stages' error grows this much per layer
  std::string verdict = "FAIL: fixture";   // the result JSON's verdict
  int seqs = 1;                            // a batch run's sequences (`run --batch`)
  int fail_seq = -1;                       // only this sequence fails; -1: every one
};

// Returns the path written (under the test's temporary directory).
std::string write_fixture(const std::string& name, const FixtureSpec& spec);
// The s-th stage the fixture writes in a block: catalog names (a trace must name those), s < 30.
std::string stage_name(int s);

}  // namespace ds::view::testing
