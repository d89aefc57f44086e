// A candidate from a plugin file, as the harness sees it.
//
// The harness process never runs plugin code: what the plugin registers, its metadata and its
// plans come from short forked probes, and the library itself is opened by load(), which the
// harness calls in the candidate's child process (crash isolation). With --no-isolate and in
// `replay`, load() runs in this process, on purpose.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "candidate.h"
#include "plugin_library.h"
#include "probed_candidate.h"

namespace ds {

// The plugin's checked twin: STEM_checked.so beside STEM.so, the same candidate linked against its
// kernels' CHECKED flavour (the scaffold of `driftscope new-candidate` builds both). A run under
// the hazard checker alone (--simt-racecheck, the hazard part of check and verify) loads it instead
// of the plugin, so its kernels are checked access by access, with file:line, instead of through
// page faults; so does a schedule rerun alone (--race-check), whose first rerun interleaves checked
// kernels at memory operations. Empty when there is none, or when it is older than the plugin.
std::string checked_twin(const std::string& plugin_path);

// How long a forked probe of a plugin (what it registers, its metadata, its plans) may take before
// it is a hang: a minute, or the run's --timeout when that is shorter, so a plan() that never
// returns costs no more than a step that never returns. For as long as it lives, then the minute
// again (a run's bound never leaks into the next).
class ScopedPluginProbeTimeout {
 public:
  explicit ScopedPluginProbeTimeout(double timeout_s);
  ~ScopedPluginProbeTimeout();
  ScopedPluginProbeTimeout(const ScopedPluginProbeTimeout&) = delete;
  ScopedPluginProbeTimeout& operator=(const ScopedPluginProbeTimeout&) = delete;
};

class PluginCandidate final : public ProbedCandidate {
 public:
  // Probes the plugin (`name` empty: its only candidate): throws PluginError (not a usable plugin, no such
  // candidate) or CandidateCrash (it crashed, threw or hung while being opened).
  PluginCandidate(const std::string& path, const std::string& name);
  ~PluginCandidate() override;

  // What the file is and registers (a forked probe; throws as the constructor does).
  static PluginInfo probe(const std::string& path);
  const PluginInfo& info() const { return info_; }

  // Once loaded (in the candidate's process), the candidate itself answers these.
  bool batches(BlockKind kind) const override {
    return real_ ? real_->batches(kind) : ProbedCandidate::batches(kind);
  }
  bool batch_order_varies(BlockKind kind) const override {
    return real_ ? real_->batch_order_varies(kind) : ProbedCandidate::batch_order_varies(kind);
  }
  MoeLimits moe_limits() const override { return real_ ? real_->moe_limits() : moe_limits_; }
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  std::string path_;
  PluginInfo info_;
  std::unique_ptr<PluginLibrary> lib_;
  CandidatePtr real_;
};

}  // namespace ds
