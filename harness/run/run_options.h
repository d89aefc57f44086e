// Everything one `driftscope run` is asked to do.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "result.h"
#include "simt_options.h"
#include "trace_schema.h"

namespace ds {

// --timeout's default, in seconds (docs/cli.md): far above any step of a model the oracle can run.
inline constexpr double kDefaultTimeoutS = 600;

struct RunOptions {
  std::string model = "synthetic:qwen2-tiny";
  std::string candidate = "cpu-f16";
  // `--fill reference`: stages the candidate's plan does not produce are computed by the
  // reference fill and marked `filled`; without it such a candidate is refused (exit 3).
  bool fill = false;
  std::vector<Mode> modes = {Mode::isolated};
  bool modes_given = true;  // false: --mode was not given (a dump candidate then runs chained)
  int prompt_tokens = 4;
  // `--tokens`: the prompt's token ids (prompt_tokens follows its length); empty: drawn from the
  // seed. A dump candidate's own tokens win over it.
  std::vector<int> tokens;
  int decode_steps = 0;
  // `--batch N|FILE` and `--batch-prompts L1,L2,..` (batch_spec.h, docs/batches.md): the sequences
  // fed to the candidate at once; empty: a run of one sequence.
  std::string batch;
  std::string batch_prompts;
  // `--batch-checks` (batch_checks.h): all, none, or invariance,leak.
  std::string batch_checks = "all";
  // Set by the settle phase from the batch: its sequences and every sequence's prompt tokens
  // together (the memory estimate counts a reference and a KV cache per sequence).
  int batch_sequences = 1;
  int batch_prompt_rows = 0;
  // `--from-step N`: model steps before N run on the reference only; the candidate runs and is
  // judged from step N on. Isolated mode only, where every step's inputs (the KV cache included)
  // are the reference's: a decode step at a late position without the candidate's long prefill.
  int from_step = 0;
  // `--probe NAME` (probes.h): an input pattern aimed at one class of kernel bug; empty: none.
  std::string probe;
  // `--numerics` (numerics.h): how the candidate computes, so the noise floors model it; empty: a
  // dump mapping's `numerics:`, else the default of the candidate's storage dtype. The runner
  // leaves the resolved spelling here (numerics_str) for the trace.
  std::string numerics;
  // `--local-check auto|on|off` (local_check.h): whether a chained lane's stages are also recomputed
  // by honest engines of the numerics from the candidate's own inputs; auto: for an engine's dump.
  std::string local_check = "auto";
  // Fused GDN decode variants the plan requests, comma-separated: plain, inplace, ids,
  // conv-update, conv-update-ids (see ModelConfig::gdn_fused). Empty: plain.
  std::string gdn_variant;
  // `--baseline`: the candidate every stage is judged against instead of the oracle, run on the
  // same isolated inputs (baseline_run.h); empty: the oracle. `--baseline-gdn-variant` is its own
  // --gdn-variant (empty: plain), so fused GDN ops can be judged against the plain ones.
  std::string baseline;
  std::string baseline_gdn_variant;
  std::uint64_t seed = 0;
  int layers = 0;          // > 0: only the first `layers` layers of the model
  std::string trace_path;  // empty: no trace
  trace::Capture capture = trace::Capture::all;
  std::string capture_stages;  // regex on the stage name; empty: every stage's tensors
  int capture_layer_min = -1, capture_layer_max = 1 << 30;  // inclusive; model-level stages always
  std::string command_line;
  // In a matrix run, which case this is (index, of, shard, model, candidate, seed and the
  // single-case command line); stored as the trace's run JSON "case". Null for a single run.
  nlohmann::json case_info;
  bool isolate_process = true;  // run the candidate in a child process (crash isolation)
  // `--sandbox` (verify's default): every process that runs candidate code gets no network, writes
  // only under a temp dir of the run's, no exec or non-AF_UNIX socket, rlimits (sandbox.h).
  bool sandbox = false;
  // `--fail-on-leak`: device memory a candidate step allocated and never freed by the end of the
  // run fails it (exit 1); otherwise it is a warning.
  bool fail_on_leak = false;
  // The SIMT runtime's schedule, host threads, strict mode and race check for every launch of the
  // candidate (--simt-order, --simt-threads, --simt-strict, --race-check).
  SimtOptions simt;
  // A candidate step (or its load) taking longer is reported as crashed (hung); <= 0: no limit.
  // Finite by default so that a hanging candidate can never hang a nightly job.
  double timeout_s = kDefaultTimeoutS;
  // The most memory the run may need (its estimate, checked before any weight is read);
  // nullopt: MemAvailable. `max_memory_text` is the flag's value as given, for the refusal.
  std::optional<std::uint64_t> max_memory;
  std::string max_memory_text;
  // Observes what the run does ("gate", "load_weights", "reference_layer", "candidate_step"...):
  // lets tests prove that a refused run computed nothing.
  std::function<void(std::string_view)> on_event;
};

}  // namespace ds
