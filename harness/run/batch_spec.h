// What a batch run (`run --batch`) feeds the candidate: the sequences, each with its own prompt,
// decode steps, start position and recurrent-state slot (docs/batches.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct SeqSpec {
  int prompt_tokens = 0;    // its prefill's tokens (seeded, or `tokens`)
  std::vector<int> tokens;  // given ids; empty: drawn from the run's seed and the sequence's id
  int decode_steps = 0;     // its decode steps after the prefill; it leaves the batch after them
  // Positions before its prompt: a prefix the sequence had before the batch (a continued
  // conversation). The reference computes it alone and both lanes start from the reference's
  // cache and state of it, so the batch's first step of this sequence sits at position `start`.
  int start = 0;
  int slot = 0;  // its recurrent-state slot (GDN / conv state); the sequence's index by default
};

struct BatchSpec {
  std::vector<SeqSpec> seqs;  // empty: a run of one sequence
  std::string source;         // "--batch 4" or the file, for messages
  bool active() const { return !seqs.empty(); }
  // The model steps the batch runs: the prefill and the longest sequence's decode steps.
  int steps() const;
  // Every sequence's (start + prompt + decode) positions; the most any one needs.
  int max_positions() const;
  nlohmann::json json() const;
};

// `--batch N` with `--batch-prompts L1,L2,..` (empty: every sequence `prompt_tokens` long) and
// `decode_steps` for every sequence. Throws InputError naming the flag and the bad value.
BatchSpec batch_from_flags(int n, const std::string& prompts, int prompt_tokens, int decode_steps);
// A batch description file (YAML, docs/batches.md). Throws InputError naming the file, the
// sequence and the field.
BatchSpec batch_from_file(const std::string& path);
// `--batch`'s value: a count (with the two flags above) or a file.
BatchSpec parse_batch_arg(const std::string& arg, const std::string& prompts, int prompt_tokens,
                          int decode_steps);

}  // namespace ds
