#include "batch_feature.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "policy.h"
#include "prompt.h"
#include "run_state.h"

namespace ds {

namespace {

// Each sequence draws its tokens from a seed of its own, so no two sequences share a prompt; the
// first keeps the run's seed (a batch's sequence 0 is the run of one sequence with that prompt).
std::uint64_t seq_seed(std::uint64_t seed, int seq, bool prefix) {
  return seed + std::uint64_t(seq) * 0x9E3779B97F4A7C15ull + (prefix ? 0x5bd1e995ull : 0);
}

}  // namespace

void BatchFeature::settle(RunState& s, const ModelConfig& header) {
  RunOptions& opt = s.opt;
  if (opt.batch.empty()) {
    if (!opt.batch_prompts.empty()) throw InputError("--batch-prompts: goes with --batch N");
    if (opt.batch_checks != "all") throw InputError("--batch-checks: goes with --batch");
    return;
  }
  spec_ = parse_batch_arg(opt.batch, opt.batch_prompts, opt.prompt_tokens, opt.decode_steps);
  checks_ = parse_batch_checks(opt.batch_checks);
  const auto refuse = [&](std::string_view flag, std::string_view why) {
    throw InputError(fmt::format("{} with --batch: {}", flag, why));
  };
  if (!opt.baseline.empty()) refuse("--baseline", "a batch is judged against the oracle only");
  if (!opt.probe.empty())
    refuse("--probe", "a probe rewrites one prompt; give each sequence's in a batch file");
  if (opt.from_step > 0)
    refuse("--from-step", "every sequence runs from its prefill (use a sequence's start)");
  if (!opt.tokens.empty()) refuse("--tokens", "give each sequence's token ids in a batch file (tokens:)");
  if (opt.capture == trace::Capture::inputs)
    refuse("--capture inputs",
           "a batched step's inputs are every sequence's, which replay cannot re-run alone");
  for (std::size_t i = 0; i < spec_.seqs.size(); ++i) {
    const SeqSpec& q = spec_.seqs[i];
    if (!q.tokens.empty()) check_token_ids(q.tokens, header, fmt::format("{}: sequence {}", spec_.source, i));
    const int positions = q.start + q.prompt_tokens + q.decode_steps;
    if (header.max_positions > 0 && positions > header.max_positions)
      throw InputError(
          fmt::format("{}: sequence {}: start {} + prompt {} + decode {} = {} positions: past "
                      "{}'s context of {} positions",
                      spec_.source, i, q.start, q.prompt_tokens, q.decode_steps, positions, header.name,
                      header.max_positions));
  }
  opt.batch_sequences = int(spec_.seqs.size());
  opt.batch_prompt_rows = 0;
  for (const SeqSpec& q : spec_.seqs) opt.batch_prompt_rows += q.start + q.prompt_tokens;
  opt.decode_steps = spec_.steps();
  opt.prompt_tokens = spec_.seqs.front().prompt_tokens;
  s.report.batch_size = int(spec_.seqs.size());
}

void BatchFeature::check_candidate(const RunState& s, const Candidate& cand) const {
  if (active() && !DumpFeature::runs_code(cand))
    throw InputError(
        fmt::format("--batch: {} is a dump (one sequence's recorded tensors), not code a batch "
                    "can be fed to",
                    s.opt.candidate));
}

void BatchFeature::note_candidate(RunState& s, const ModelConfig& cfg, const Candidate& cand) {
  served_.clear();
  if (!active()) return;
  std::vector<BlockKind> kinds = {BlockKind::embed, BlockKind::head};
  for (int l = 0; l < cfg.n_layers; ++l) kinds.push_back(cfg.block_kind(l));
  std::vector<std::string> batched, single;
  order_varies_.clear();
  for (BlockKind k : kinds) {
    const std::string name(block_kind_name(k));
    if (served_.count(name)) continue;
    served_[name] = cand.batches(k) ? "batched" : "per-sequence";
    (cand.batches(k) ? batched : single).push_back(name);
    if (cand.batches(k) && cand.batch_order_varies(k)) order_varies_.push_back(name);
  }
  std::vector<std::string> prompts, decodes;
  bool started = false;
  for (const SeqSpec& q : spec_.seqs) {
    started = started || q.start > 0;
    prompts.push_back(q.start > 0 ? fmt::format("{}@{}", q.prompt_tokens, q.start)
                                  : fmt::format("{}", q.prompt_tokens));
    decodes.push_back(fmt::format("{}", q.decode_steps));
  }
  s.report.notes.push_back(fmt::format(
      "batch of {} sequences ({}): prompts of {} tokens{}, {} decode steps; the header names sequence 0's. "
      "{} "
      "takes {} batched{}",
      spec_.seqs.size(), spec_.source, fmt::join(prompts, ", "), started ? " (N@S: from position S)" : "",
      fmt::join(decodes, ", "), cand.name(),
      batched.empty() ? std::string("no block") : fmt::format("{}", fmt::join(batched, ", ")),
      single.empty()
          ? std::string()
          : fmt::format("; the harness serves it {} one sequence at a time", fmt::join(single, ", "))));
  if (!order_varies_.empty() && checks_.invariance)
    s.report.notes.push_back(fmt::format(
        "{} declares a batch-dependent reduction order for {}: the invariance check holds each sequence "
        "there within {:g} x its noise floor of the same sequence run alone, not bit for bit",
        cand.name(), fmt::join(order_varies_, ", "), kDefaultFloorFactor));
}

std::vector<int> BatchFeature::prompt(int seq, const ModelConfig& cfg, std::uint64_t seed,
                                      int first_token) const {
  const SeqSpec& q = spec_.seqs.at(std::size_t(seq));
  if (!q.tokens.empty()) return q.tokens;
  // A sequence after a prefix continues it: no start-of-sequence token of its own.
  return seeded_prompt(q.prompt_tokens, cfg.vocab, seq_seed(seed, seq, false),
                       q.start > 0 ? -1 : first_token);
}

std::vector<int> BatchFeature::prefix(int seq, const ModelConfig& cfg, std::uint64_t seed,
                                      int first_token) const {
  const SeqSpec& q = spec_.seqs.at(std::size_t(seq));
  if (q.start == 0) return {};
  return seeded_prompt(q.start, cfg.vocab, seq_seed(seed, seq, true), first_token);
}

nlohmann::json BatchFeature::json() const {
  if (!active()) return nullptr;
  nlohmann::json j = spec_.json();
  j["served"] = served_;
  std::vector<std::string> checks;
  if (checks_.invariance) checks.emplace_back("invariance");
  if (checks_.leak) checks.emplace_back("leak");
  j["checks"] = checks;
  j["order_varies"] = order_varies_;
  return j;
}

}  // namespace ds
