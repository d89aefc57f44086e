// Phase 1, settle inputs (phases.h): everything the run will be is decided here, from the
// options, the model's header and the candidate, before any gate or weight.
#include <fmt/format.h>

#include "phases.h"
#include "prompt.h"
#include "plugin/plugin_candidate.h"
#include "registry.h"
#include "run_json.h"
#include "selector_check.h"

namespace ds {

namespace {

// A run asking for more than the model has is bad input, not silently a smaller run.
void check_bounds(const RunOptions& opt, const ModelConfig& header) {
  if (opt.layers > 0) {
    const ModelConfig full = load_config_spec(opt.model, 0);
    if (opt.layers > full.n_layers)
      throw InputError(
          fmt::format("--layers {}: {} has only {} layer(s)", opt.layers, full.name, full.n_layers));
  }
  const long positions = long(opt.prompt_tokens) + opt.decode_steps;
  if (header.max_positions > 0 && positions > header.max_positions)
    throw InputError(fmt::format(
        "--prompt-tokens {} + --decode-steps {} = {} positions: past {}'s context of {} positions",
        opt.prompt_tokens, opt.decode_steps, positions, header.name, header.max_positions));
}

// The prompt when it is given rather than seeded: a dump's own tokens win over --tokens.
void settle_prompt(RunState& s, const ModelConfig& header, const Candidate& cand) {
  std::string source = "--tokens";
  s.prompt = s.opt.tokens;
  DumpFeature::settle_prompt(s, header, cand, source);
  LateStart::check(s.opt);
  if (s.prompt.empty()) return;
  check_token_ids(s.prompt, header, source);
  s.opt.prompt_tokens = int(s.prompt.size());
  check_bounds(s.opt, header);
}

// The floors model how the candidate computes: --numerics, else its dump mapping's `numerics:`,
// else the default of its storage dtype. A declared one is named in the report's notes.
void settle_numerics(RunState& s, const Candidate& cand) {
  std::string spec = s.opt.numerics, from = "--numerics";
  DumpFeature::declared_numerics(cand, spec, from);
  try {
    s.numerics = spec.empty() ? default_numerics(cand.storage_dtype()) : parse_numerics(spec);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: {}", from, e.what()));
  }
  s.opt.numerics = s.report.numerics = numerics_str(s.numerics);
  if (!spec.empty())
    s.report.notes.push_back(
        fmt::format("noise floors model {} numerics ({}, from {})", spec, s.report.numerics, from));
}

}  // namespace

ModelConfig settle_header(RunState& s) {
  ModelConfig header = load_config_spec(s.opt.model, s.opt.layers);
  ProbeFeature::settle(header, s.opt);
  s.features.batch.settle(s, header);
  check_bounds(s.opt, header);
  check_selectors(s.opt, header, s.policy);
  header.gdn_fused = gdn_variant_ops(s.opt.gdn_variant);
  s.header = header;
  return header;
}

void settle_candidate(RunState& s, const ModelConfig& header, const Candidate& cand) {
  s.origin = plugin_origin(cand);
  if (s.origin && serves_checked_kernels(s.opt.simt)) s.report.checked_twin = checked_twin(s.origin->path);
  s.candidate_json = candidate_json(s.opt, cand, s.origin, s.report.checked_twin);
  s.features.batch.check_candidate(s, cand);
  settle_prompt(s, header, cand);
  settle_numerics(s, cand);
  s.report.prompt_tokens = s.opt.prompt_tokens;
  s.report.decode_steps = s.opt.decode_steps;
  s.report.from_step = s.opt.from_step;
  s.report.probe = s.opt.probe;
}

}  // namespace ds
