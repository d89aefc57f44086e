// The prompt both sides are fed when it is given, not drawn from the seed: `run --tokens`, or
// the tokens a dump directory carries (which win: they are what the engine was fed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_config.h"

namespace ds {

// "1,5,9" or "@FILE" (ids separated by commas or whitespace); throws InputError naming the
// argument or the file and the bad entry.
std::vector<int> parse_tokens_arg(const std::string& arg);
// Every id in [0, vocab); throws InputError naming `source`, the position and the id.
void check_token_ids(const std::vector<int>& ids, const ModelConfig& cfg, const std::string& source);
// `n` prompt tokens in [0, vocab) drawn from the run's seed, so every run is reproducible;
// `first` >= 0 is the first token instead (a start-of-sequence token).
std::vector<int> seeded_prompt(int n, int vocab, std::uint64_t seed, int first = -1);
// The start-of-sequence token a seeded prompt for `model_spec` begins with: a synthetic model's
// sink token, which carries its massive activations; -1 (none) for a model file.
int seeded_prompt_start(const std::string& model_spec);

}  // namespace ds
