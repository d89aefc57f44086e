// What a batch run (`run --batch`) feeds the candidate: the sequences, each with its own prompt,
// decode steps, start position and recurrent-state slot (docs/batches.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
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
  // The slot of the recurrent-state cache holding its `start` prefix's state before its first
  // call (the `ids` entry that call hands over); the sequence's index by default.
  int slot = 0;
  // The model step it enters the batch at (continuous batching): its prompt runs at that step
  // while the others decode. Its own step 0 is its prefill; it leaves after join + decode_steps.
  int join = 0;
  bool active(int step) const { return step >= join && step <= join + decode_steps; }
};

// Where one sequence's recurrent state moves in one model step (docs/batches.md, "State
// slots"): each call writes sequence i's new state to slot i (rs_head 0); it reads its prior
// state from the slot its last call wrote (`ids`), or for its first call the slot its `start`
// prefix's state sits in. A sequence with no state yet starts from a zeroed slot (a reset).
struct SlotMove {
  int step = 0, seq = 0;
  int from = -1;  // the slot its prior state is read from; -1: none (a reset)
  int to = 0;     // the slot its new state is written to
  std::string_view kind() const { return from < 0 ? "reset" : from == to ? "identity" : "moved"; }
};

struct BatchSpec {
  std::vector<SeqSpec> seqs;  // empty: a run of one sequence
  std::string source;         // "--batch 4" or the file, for messages
  bool active() const { return !seqs.empty(); }
  // The model steps after the first (step 0) the batch runs: until its last sequence leaves.
  int steps() const;
  // Every sequence's (start + prompt + decode) positions; the most any one needs.
  int max_positions() const;
  // Every step's slot moves, step by step, sequences in batch order. Throws InputError where a
  // call writes a waiting sequence's `slot` before it joins.
  std::vector<SlotMove> slot_plan() const;
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
