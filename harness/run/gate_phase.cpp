// Phase 2, gate (phases.h): from the model's header and the candidate's plans alone, before
// any weight is read. A refusal is exit 3, a budget the machine cannot hold exit 2.
#include <fmt/format.h>

#include "gate.h"
#include "phases.h"

namespace ds {

namespace {

// The coverage gate, then the capability gate, of `cand` for `header`; the fill completes it
// where the run asks for it.
void gate_candidate_of(RunState& s, const ModelConfig& header, CandidatePtr& cand) {
  const GateAnswer g = gate_candidate(header, *cand, FillFeature::completes(s.opt, *cand));
  if (g.unavailable) throw InputError(g.refusal);
  if (!g.pass) {
    s.stop_ops = {g.need.str(), g.have.str(), g.missing.str()};
    throw GateRefusal(g.refusal, g.missing.empty() ? std::string() : g.missing.str());
  }
  cand = FillFeature::complete(std::move(cand), header, s.opt, g.coverage);
}

// The memory budget, before any weight is read: a run the machine cannot hold is bad input
// (exit 2) now, not an OOM kill of the harness and its child half-way through loading.
void check_memory(RunState& s, const ModelConfig& header, const CandidateMemory& cand) {
  const RunOptions& opt = s.opt;
  const ModelConfig full = opt.layers > 0 ? load_config_spec(opt.model, 0) : header;
  const std::optional<CandidateMemory> base = s.features.baseline.memory();
  const double bytes_per_weight = held_bytes_per_weight(opt.model, full);
  const MemoryEstimate e = estimate_memory(header, bytes_per_weight, opt, cand, base ? &*base : nullptr);
  s.report.memory = e.str();
  const std::optional<std::uint64_t> available = available_memory();
  const std::optional<std::uint64_t> budget = opt.max_memory ? opt.max_memory : available;
  if (!budget || e.total() <= *budget) return;
  // A quantized model's matrices stay quantized for cpu-f16 and the references; any other candidate
  // holds them decoded, which is most of such an estimate.
  const std::string decodes =
      bytes_per_weight < 2.0 && !cand.reads_quantized && !cand.dump
          ? fmt::format(
                " ({} decodes this quantized model's matrices to f32 in its process; cpu-f16 reads them "
                "a row at a time)",
                cand.name)
          : std::string();
  throw InputError(fmt::format(
      "memory budget: this run needs an estimated {}, over the budget of {} ({}){}; refused before loading "
      "any weight. Run fewer --layers, or raise --max-memory",
      e.str(), format_bytes(*budget),
      opt.max_memory ? fmt::format("--max-memory {}", opt.max_memory_text)
                     : std::string("MemAvailable of /proc/meminfo"),
      decodes));
}

}  // namespace

void gate_phase(RunState& s, const ModelConfig& header, CandidatePtr& cand) {
  const CandidateMemory memory = candidate_memory(*cand);  // the candidate as made, before the fill
  s.event("gate");
  DumpFeature::fill_missing_sources(s, *cand, header);
  gate_candidate_of(s, header, cand);
  s.features.baseline.make(s.opt, header);
  DumpFeature::preflight(*cand, header, s.opt);
  check_memory(s, header, memory);
}

}  // namespace ds
