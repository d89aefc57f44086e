// The run as a pipeline of phases (phases.h; docs/ARCHITECTURE.md walks one run):
//   settle inputs -> gate -> load -> step loop -> conclude
// and how a stop before any stage (bad input, a refusal, an unwritable trace) leaves its trace.
// Also the small public helpers of runner.h.
#include "runner.h"

#include <fmt/format.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "contracts.h"
#include "load_model.h"
#include "phases.h"
#include "plugin/plugin_candidate.h"
#include "registry.h"
#include "python/python_candidate.h"
#include "sandbox.h"
#include "scratch_dir.h"
#include "trace_stub.h"

namespace ds {

ModelConfig load_config_spec(const std::string& spec, int layers) {
  try {
    return ref::load_config(spec, layers);
  } catch (const ref::ModelError& e) {
    throw InputError(fmt::format("--model: {}", e.what()));
  }
}

std::string_view exit_word(int exit_code) {
  switch (exit_code) {
    case kExitParity: return "PASS";
    case kExitFailure: return "FAIL";
    case kExitUsage: return "BAD-INPUT";
    case kExitRefused: return "REFUSED";
    case kExitCrashed: return "CRASHED";
    default: return "?";
  }
}

RunReport stopped_report(std::string model, std::string candidate, std::string policy, int exit_code,
                         std::string_view reason) {
  RunReport r;
  r.model = std::move(model);
  r.candidate = std::move(candidate);
  r.policy = std::move(policy);
  r.exit_code = exit_code;
  r.verdict = std::string(reason.substr(0, reason.find('\n')));
  r.stop_reason = std::string(reason);
  return r;
}

Model load_model_spec(const std::string& spec, std::uint64_t seed, int layers) {
  try {
    return ref::load_model(spec, seed, layers);
  } catch (const ref::ModelError& e) {
    throw InputError(fmt::format("--model: {}", e.what()));
  }
}

OpSet gdn_variant_ops(std::string_view spec) {
  OpSet ops;
  std::size_t at = 0;
  while (at <= spec.size() && !spec.empty()) {
    const std::size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string_view v = spec.substr(at, comma - at);
    if (v == "inplace")
      ops.add(Op::GdnInplace);
    else if (v == "ids")
      ops.add(Op::GdnInplaceIds);
    else if (v == "conv-update")
      ops.add(Op::SsmConvUpdate);
    else if (v == "conv-update-ids")
      ops.add(Op::SsmConvUpdateIds);
    else if (v != "plain")
      throw InputError(
          fmt::format("--gdn-variant: unknown variant '{}' (plain, inplace, ids, conv-update, "
                      "conv-update-ids; comma-separated)",
                      v));
    at = comma + 1;
  }
  return ops;
}

namespace {

// The phases in order. A crash while the candidate is opened or loaded, or in the step loop,
// still concludes (exit 4, the trace says so); bad input and refusals leave by exception.
RunReport run_phases(RunState& s) {
  BaselineFeature::check_usage(s.opt);
  const ScopedPluginProbeTimeout probe_bound(s.opt.timeout_s);
  const ModelConfig header = settle_header(s);
  CandidatePtr cand;
  try {
    cand = make_candidate(s.opt.candidate);
    settle_candidate(s, header, *cand);
    gate_phase(s, header, cand);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--candidate: {}", e.what()));
  } catch (const CandidateCrash& crash) {
    // A plugin that crashed or hung while being opened or asked for its plans: exit 4, and the
    // trace says so.
    if (!s.opt.trace_path.empty()) s.open_trace(header);
    s.crash = fmt::format("{} crashed while being opened ({}): {}", s.crasher(crash), crash.step_name,
                          crash.what());
    s.report.model = header.name;
    s.report.policy = s.policy.name();
    s.report.candidate = s.opt.candidate;
    s.report.baseline = s.opt.baseline;
    return conclude_phase(s);
  }
  // A probe aimed at a block the model lacks would run unchanged inputs and "pass": skipped, saying why.
  if (auto why = ProbeFeature::skip_reason(header, s.opt)) return skipped_run(s, header, *why);
  Loaded loaded = load_phase(s, header, std::move(cand));  // held until the run concludes
  if (loaded.loaded) step_loop(s, loaded);
  return conclude_phase(s);
}

}  // namespace

std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand) {
  return capability_refusal(cfg, cand, ref::required_ops(cfg));
}

std::optional<std::string> capability_refusal(const ModelConfig& cfg, const Candidate& cand,
                                              const OpSet& need) {
  const OpSet have = cand.capabilities();
  if (have.contains(need)) return std::nullopt;
  const OpSet missing = need.minus(have);
  return fmt::format(
      "REFUSED by the capability gate: {} cannot serve {} ({})\n"
      "  Model requires:   {}\n"
      "  Backend supports: {}\n"
      "  Missing:          {}\n"
      "  -> Run {} on a candidate that implements {} (see `driftscope gate --model {}`),\n"
      "     or implement {} in {}. Nothing was computed.",
      cand.name(), cfg.name, family_name(cfg.family), need.str(), have.str(), missing.str(), cfg.name,
      missing.str(), cfg.name, missing.str(), cand.name());
}

namespace {

// `--sandbox`: the run's temp dir, the only place its candidate's processes may write, made for the
// run and removed with what they left in it; the sandbox holds for every process started meanwhile.
class RunSandbox {
 public:
  explicit RunSandbox(const RunOptions& opt) {
    // Driftscope's own candidates run unconfined: they may build a kernel module on first use.
    if (!opt.sandbox || !(runs_foreign_code(opt.candidate) || runs_foreign_code(opt.baseline))) return;
    // In-process, the candidate's code would run in the harness itself, which is never confined.
    if (!opt.isolate_process)
      throw InputError(
          "--sandbox confines the candidate's own process: it cannot be combined with --no-isolate");
    // A scratch dir: removed at the end, on SIGTERM, or (after a SIGKILL) by the next run.
    remove_stale_scratch_dirs();
    dir_.emplace("", "driftscope-sandbox");
    // A Python candidate's process starts its interpreter; every other candidate may not exec.
    const bool python = parse_python_spec(opt.candidate) || parse_python_spec(opt.baseline);
    sandbox::configure(sandbox::Options{dir_->path().string(), python});
  }
  ~RunSandbox() {
    if (dir_) sandbox::configure(std::nullopt);
  }
  RunSandbox(const RunSandbox&) = delete;
  RunSandbox& operator=(const RunSandbox&) = delete;

 private:
  std::optional<ScratchDir> dir_;
};

}  // namespace

RunReport run_parity(const RunOptions& opt, const Policy& policy) {
  const RunSandbox sandboxed(opt);
  RunState run(opt, policy);
  try {
    if (opt.prompt_tokens <= 0) throw InputError("--prompt-tokens must be at least 1");
    if (opt.decode_steps < 0) throw InputError("--decode-steps must not be negative");
    if (opt.layers < 0) throw InputError("--layers must not be negative (0: every layer)");
    return run_phases(run);
  } catch (const GateRefusal& e) {
    leave_stopped_trace(run, trace::kStatusRefused, kExitRefused, e.what());
    throw;
  } catch (const InputError& e) {
    leave_stopped_trace(run, trace::kStatusBadInput, kExitUsage, e.full());
    throw;
  } catch (const trace::TraceError& e) {
    // The trace cannot be written (disk full, I/O error): exit 2 naming it; the stages written
    // before stay readable, INCOMPLETE, and the trace says the write failed.
    const bool recorded = leave_write_failure(run, e.what());
    throw TraceWriteError(e.what(), recorded);
  }
}

}  // namespace ds
