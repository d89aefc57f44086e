// The mutant candidates: the simt candidate run on a mutant KernelTable (kernels/mutants/: one
// production kernel with one planted bug each), and where the harness must first catch each one
// (docs/mutants.md has the same table with the reasoning).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kernels.h"

namespace ds::gpu {

struct MutantInfo {
  std::string_view name;         // registry name without "mutant:"; kernels/mutants/<name>.patch or .cu
  std::string_view model;        // the model it is caught on
  std::string_view first_stage;  // first failing stage (catalog name)
  int first_layer;               // its layer
  std::string_view mode;         // "isolated"
  std::string_view policy;       // "default" or "strict" (see docs/mutants.md)
  std::string_view what;         // the bug in one line
  int first_step = 0;            // model step of the first failure: 0 the prefill, 1.. decode
  // A race, reported as status `race` at first_stage naming race_kernel: "schedule" under
  // `--race-check 2`, "hazard" under `--simt-racecheck` (which names race_hazard: RAW, WAR, WAW).
  std::string_view race_by = {};
  std::string_view race_kernel = {};
  std::string_view race_hazard = {};
  // > 0: a bug only late positions show, run with this many prompt tokens, one layer and
  // `--from-step first_step` (the candidate skips the long prefill; isolated mode).
  int late_prompt = 0;
  // A bug only an input pattern shows: run with `--probe probe` (probes.h).
  std::string_view probe = {};
  // A bug only some widths show: the same run on this model, whose widths hide it, passes.
  std::string_view hidden_on = {};
};

std::span<const MutantInfo> mutants();

// The GDN kernel mutants (mutant:gdn-<name>), run by the simt candidate on
// synthetic:qwen35-tiny, isolated mode, default policy, with `--gdn-variant gdn_variant`;
// first caught at first_stage of first_layer at model step first_step (docs/mutants.md).
struct GdnMutantInfo {
  std::string_view name;         // registry name without "mutant:"; kernels/mutants/<name>.patch or .cu
  std::string_view gdn_variant;  // the --gdn-variant that exposes it ("" = plain)
  std::string_view first_stage;
  int first_layer;
  int first_step;
  std::string_view what;
};

std::span<const GdnMutantInfo> gdn_mutants();

// The simt KernelTable of mutant `name`, from its module (kernels/mutants/mutant_module.cpp),
// opened the first time a process asks (built then in a build tree that lacks it); null with `why`
// when it cannot be built or loaded. Every call hands this run's SIMT settings and launch sinks to
// the module's SIMT runtime, so a candidate asks in load(), after the run configured them.
// std::logic_error when `name` is no registered mutant.
const dsk::KernelTable* mutant_kernels(std::string_view name, std::string& why);

}  // namespace ds::gpu
