// Near-ties in a mixture-of-experts router (docs/moe.md). Expert ids are judged exactly, but
// where the oracle's own logits leave two experts within the noise floor of each other, picking
// either is a legitimate choice: such a row is accepted, the run says so, and what follows
// (expert_weights, moe_out, residual_2) is judged against the oracle given the candidate's choice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model_config.h"
#include "result.h"
#include "tensor.h"

namespace ds {

// The band within which two oracle logits count as tied: kTieFloorK times the largest error the
// noise floor (a correct engine at the candidate's storage dtype) makes on the row's logits, and
// at least two units in the last place of that dtype at the row's largest logit.
inline constexpr double kTieFloorK = 4.0;

struct TieFlip {
  std::int64_t token = 0;  // row of the step
  std::vector<int> oracle, candidate;
  double margin = 0;  // the largest gap between the oracle logits the two choices rank alike
  double band = 0;    // the tie band of the row
};

struct TieCheck {
  std::vector<TieFlip> flips;  // rows chosen differently within the band
  Tensor ids;                  // the oracle's ids with those rows the candidate's
};

// nullopt when every row agrees or a row differs beyond its band (then the exact comparison of
// expert_ids fails, as it should). `floor_logits` may be null (no floor run: the ulp band only).
std::optional<TieCheck> legitimate_tie_flips(const ModelConfig& cfg, const Tensor& oracle_logits,
                                             const Tensor* floor_logits, const Tensor& oracle_ids,
                                             const Tensor& cand_ids, DType storage);
// One line for the run's notes naming the flip.
std::string tie_note(const TieFlip& f, const ModelConfig& cfg, int step, int layer, Mode mode,
                     const Tensor& oracle_logits);

}  // namespace ds
