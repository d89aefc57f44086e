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

namespace ds {

// The plugin's checked twin: STEM_checked.so beside STEM.so, the same candidate linked against its
// kernels' CHECKED flavour (the scaffold of `driftscope new-candidate` builds both). A run under
// the hazard checker alone (--simt-racecheck, the hazard part of check and verify) loads it instead
// of the plugin, so its kernels are checked access by access, with file:line, instead of through
// page faults; so does a schedule rerun alone (--race-check), whose first rerun interleaves checked
// kernels at memory operations. Empty when there is none, or when it is older than the plugin.
std::string checked_twin(const std::string& plugin_path);

class PluginCandidate final : public Candidate {
 public:
  // Probes the plugin (`name` empty: its only candidate): throws PluginError (not a usable plugin, no such
  // candidate) or CandidateCrash (it crashed, threw or hung while being opened).
  PluginCandidate(const std::string& path, const std::string& name);
  ~PluginCandidate() override;

  // What the file is and registers (a forked probe; throws as the constructor does).
  static PluginInfo probe(const std::string& path);
  const PluginInfo& info() const { return info_; }

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DType storage_dtype() const override { return storage_; }
  OpSet capabilities() const override { return caps_; }
  std::string unavailable() const override { return unavailable_; }
  bool batches(BlockKind kind) const override {
    return real_ ? real_->batches(kind) : (batched_kinds_ >> unsigned(kind)) & 1u;
  }
  bool batch_order_varies(BlockKind kind) const override {
    return real_ ? real_->batch_order_varies(kind) : (order_varies_kinds_ >> unsigned(kind)) & 1u;
  }
  MoeLimits moe_limits() const override { return real_ ? real_->moe_limits() : moe_limits_; }
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  std::string path_, name_;
  PluginInfo info_;
  std::string description_;
  DType storage_ = DType::f32;
  OpSet caps_;
  std::string unavailable_;
  std::uint64_t batched_kinds_ = 0;       // bit k: batches(BlockKind(k)), from the metadata probe
  std::uint64_t order_varies_kinds_ = 0;  // bit k: batch_order_varies(BlockKind(k)), likewise
  MoeLimits moe_limits_;                  // likewise
  // Plans probed for one configuration (every block kind it uses), keyed by that configuration.
  mutable std::string plans_key_;
  mutable std::map<BlockKind, std::vector<KernelStep>> plans_;
  std::unique_ptr<PluginLibrary> lib_;
  CandidatePtr real_;
};

}  // namespace ds
