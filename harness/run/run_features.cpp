// LateStart, ProbeFeature, DumpFeature, FillFeature (run_features.h): the small features, in the
// phases they plug into. BaselineFeature has its own file.
#include "run_features.h"

#include <fmt/format.h>

#include <algorithm>

#include "cpu/cpu_candidate.h"
#include "dump_run.h"
#include "fill_candidate.h"
#include "probes.h"
#include "prompt.h"
#include "registry.h"
#include "run_state.h"
#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
#include "gpu/gpu_candidate.h"
#endif

namespace ds {

void LateStart::check(const RunOptions& opt) {
  if (opt.from_step == 0) return;
  if (opt.from_step < 0 || opt.from_step > opt.decode_steps)
    throw InputError(fmt::format("--from-step {}: must be between 0 and --decode-steps ({})", opt.from_step,
                                 opt.decode_steps));
  if (std::find(opt.modes.begin(), opt.modes.end(), Mode::chained) != opt.modes.end())
    throw InputError(fmt::format(
        "--from-step {} needs --mode isolated: the chained lane feeds the candidate its own outputs of the "
        "steps before, which it would not have run",
        opt.from_step));
}

void ProbeFeature::settle(ModelConfig& header, RunOptions& opt) {
  if (!opt.probe.empty()) apply_probe_options(find_probe(opt.probe), header, opt);
}

std::optional<std::string> ProbeFeature::skip_reason(const ModelConfig& header, const RunOptions& opt) {
  if (opt.probe.empty()) return std::nullopt;
  return probe_skip_reason(find_probe(opt.probe), header);
}

void ProbeFeature::rewrite_weights(RunState& s, Model& m) {
  if (s.opt.probe.empty()) return;
  // Both sides run the rewritten weights; the prompt is settled here so the rows it reads are known.
  if (s.prompt.empty())
    s.prompt =
        seeded_prompt(s.opt.prompt_tokens, m.config.vocab, s.opt.seed, seeded_prompt_start(s.opt.model));
  s.report.probe_note = apply_probe_weights(find_probe(s.opt.probe), m.config, m.weights, s.prompt);
}

void DumpFeature::settle_prompt(RunState& s, const ModelConfig& header, const Candidate& cand,
                                std::string& source) {
  const auto* d = as_dump(cand);
  if (!d) return;
  try {
    if (std::string chose = d->settle(header); !chose.empty()) s.report.notes.push_back(std::move(chose));
  } catch (const dump::DumpError& e) {
    throw InputError(e.what());
  }
  if (!s.opt.probe.empty())
    throw InputError(
        fmt::format("--probe {}: {} replays an engine's own prompt and weights; a probe needs a "
                    "candidate that runs the probe's",
                    s.opt.probe, s.opt.candidate));
  check_dump_modes(s.opt.modes, s.opt.modes_given, s.opt.candidate);
  if (auto t = d->tokens()) {
    s.prompt = std::move(*t);
    source = fmt::format("the tokens of {}", s.opt.candidate);
  }
  try {
    s.engine_choices = d->engine_choices();
  } catch (const dump::DumpError& e) {
    throw InputError(e.what());
  }
}

void DumpFeature::declared_numerics(const Candidate& cand, std::string& spec, std::string& from) {
  if (const auto* d = as_dump(cand); spec.empty() && d && !d->mapping().numerics.empty()) {
    spec = d->mapping().numerics;
    from = fmt::format("{}: numerics", d->mapping().path);
  }
}

void DumpFeature::fill_missing_sources(RunState& s, const Candidate& cand, const ModelConfig& header) {
  const auto* d = as_dump(cand);
  // Without --fill reference the preflight names the first missing file, offering the flag.
  if (!d || !s.opt.fill) return;
  for (const auto& [stage, first] : d->missing_sources(header, s.opt.decode_steps + 1)) {
    d->unmap(stage);
    s.report.notes.push_back(
        fmt::format("{}: not in the dump: stage {} is filled by the reference at every step and layer "
                    "(--fill reference), not judged",
                    first, stage));
  }
}

void DumpFeature::preflight(const Candidate& cand, const ModelConfig& header, const RunOptions& opt) {
  const auto* d = as_dump(cand);
  if (!d) return;
  // (first position, tokens) of every model step.
  std::vector<std::pair<int, int>> steps = {{0, opt.prompt_tokens}};
  for (int i = 1; i <= opt.decode_steps; ++i) steps.push_back({opt.prompt_tokens + i - 1, 1});
  d->preflight(header, steps);
}

bool DumpFeature::runs_code(const Candidate& cand) { return as_dump(cand) == nullptr; }

void DumpFeature::stand_in_embed(const Candidate& cand, TensorMap& outs, const Tensor& ref_embed) {
  if (as_dump(cand) && !outs.count("embed")) outs.emplace("embed", ref_embed.to(cand.storage_dtype()));
}

bool FillFeature::completes(const RunOptions& opt, const Candidate& cand) {
  // A dump's unmapped stages are not refused: they are judged `missing`.
  return opt.fill || as_dump(cand) != nullptr;
}

CandidatePtr FillFeature::complete(CandidatePtr cand, const ModelConfig& header, const RunOptions& opt,
                                   const Coverage& coverage) {
  if (as_dump(*cand)) return fill_declared_absent(std::move(cand), header, opt.fill);
  if (!opt.fill || coverage.complete()) return cand;
  CandidatePtr fill = make_fill_candidate(cand->storage_dtype());
  cand = std::make_unique<FilledCandidate>(std::move(cand), std::move(fill));
  (void)plan_coverage(header, *cand);  // the merged plan must be sound too (throws PlanError)
  return cand;
}

CandidateMemory candidate_memory(const Candidate& cand) {
  CandidateMemory m;
  m.name = cand.name();
  m.storage = cand.storage_dtype();
  m.dump = as_dump(cand) != nullptr;
  m.on_device = m.name.rfind("cuda", 0) == 0;
  // cpu-f16 reads the matrices where the harness holds them; its f32 copies of vector weights are
  // too small to count.
  if (dynamic_cast<const cpu::CpuCandidate*>(&cand) != nullptr) m.in_place = m.reads_quantized = true;
#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
  if (const auto* g = dynamic_cast<const gpu::GpuCandidate*>(&cand)) {
    // The kernels read a quantized model's blocks as stored (kernels/quant_rows.cuh).
    m.reads_quantized = true;
    if (g->reads_weights_in_place()) {
      m.in_place = true;
      m.copied_roles = gpu::GpuCandidate::packed_roles;
    }
  }
#endif
  return m;
}

}  // namespace ds
