// What the phases of one run share (runner.cpp draws the pipeline; docs/ARCHITECTURE.md walks
// it): the options as the settle phase left them, the report and the trace being written, and
// the features the run carries. Each phase file reads and fills one RunState.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launch_sinks.h"
#include "local_check.h"
#include "numerics.h"
#include "plugin/plugin_library.h"
#include "reference.h"
#include "run_features.h"
#include "runner.h"
#include "trace_writer.h"

namespace ds {

// (layer, stage) -> tensor: a stage's history across model steps.
using StageHistory = std::map<std::pair<int, std::string>, Tensor>;

// What one mode of the candidate has produced so far: this layer's stages, and every
// layer's stage history across model steps (for cache: and prev: inputs).
struct Lane {
  Mode mode;
  Tensor x;             // current layer input
  StageHistory cache;   // rows so far
  StageHistory prev;    // previous step
  StageHistory latest;  // this step
  // The noise floor: the reference at the candidate's storage dtype, fed like the candidate
  // (the oracle's inputs in isolated mode, its own outputs in chained mode).
  std::unique_ptr<ref::Reference> floor;
  Tensor floor_x;
  // A chained lane that took a legitimate near-tie choice in a MoE router the oracle did not
  // (moe_ties.h) is judged from there on against its own copy of the oracle, given that choice,
  // fed its own layer outputs (own_x); null: the run's oracle.
  std::unique_ptr<ref::Reference> own_oracle;
  Tensor own_x;
  // The local check's honest engines (local_check.h); empty where the lane runs none.
  HonestEngines honest;
};

struct RunState {
  RunState(const RunOptions& o, const Policy& p) : opt(o), policy(p) {}

  RunOptions opt;  // as settled: a probe, a dump or --tokens rewrite some of them
  const Policy& policy;
  RunReport report;
  std::optional<ModelConfig> header;    // once the model's configuration is read
  nlohmann::json candidate_json;        // once the candidate is made (null before)
  std::optional<PluginInfo> origin;     // the plugin file behind the candidate, if any
  std::array<std::string, 3> stop_ops;  // required, supported, missing: set by a refusal
  std::string crash;                    // why the candidate (or baseline) crashed, when it did
  std::vector<int> prompt;              // given (--tokens or the dump's); empty: drawn from the seed
  // The token an engine's dump says it chose after each model step (DIR/greedy.txt): fed instead
  // of the reference's greedy choice, since the dump's later steps consumed it. Empty: none.
  std::vector<int> engine_choices;
  Numerics numerics;                                        // how the noise floors compute (settle phase)
  std::optional<launch_sinks::ScopedOptions> simt_options;  // the run's SIMT settings, while it runs
  RunFeatures features;  // after simt_options: a baseline's child goes before its settings do
  std::unique_ptr<trace::TraceWriter> trace;

  void event(std::string_view what) const {
    if (opt.on_event) opt.on_event(what);
  }
  void flush() const {
    if (trace) trace->flush();
  }
  // One judged (or crashed, filled) stage: into the report and, when one is open, the trace.
  void record(StageResult r, const Tensor* ref, const Tensor* cand) {
    if (trace) trace->append(r, ref, cand);
    report.results.push_back(std::move(r));
  }
  nlohmann::json run_json(const ModelConfig* cfg) const;
  void open_trace(const ModelConfig& cfg);
  // Who crashed: the candidate, or the baseline it is judged against (never taken for the other).
  std::string crasher(const CandidateCrash& crash) const;
};

}  // namespace ds
