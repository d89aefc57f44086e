#include "moe_ties.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ds {

namespace {

// A unit in the last place of `dtype` at magnitude `x`.
double ulp(DType dtype, double x) {
  const int mantissa = dtype == DType::f16 ? 10 : dtype == DType::bf16 ? 7 : dtype == DType::f32 ? 23 : 52;
  const double a = std::max(std::abs(x), 1e-30);
  return std::ldexp(1.0, std::ilogb(a) - mantissa);
}

}  // namespace

std::optional<TieCheck> legitimate_tie_flips(const ModelConfig& cfg, const Tensor& oracle_logits,
                                             const Tensor* floor_logits, const Tensor& oracle_ids,
                                             const Tensor& cand_ids, DType storage) {
  const std::int64_t E = cfg.n_experts, K = cfg.n_experts_used;
  if (oracle_ids.numel() != cand_ids.numel() || oracle_logits.numel() != oracle_ids.numel() / K * E)
    return std::nullopt;
  const bool have_floor = floor_logits && floor_logits->numel() == oracle_logits.numel();
  TieCheck out;
  out.ids = oracle_ids;
  for (std::int64_t t = 0; t < oracle_ids.numel() / K; ++t) {
    bool same = true;
    for (std::int64_t j = 0; j < K; ++j) same &= oracle_ids.at(t * K + j) == cand_ids.at(t * K + j);
    if (same) continue;
    double floor_err = 0, largest = 0;
    for (std::int64_t e = 0; e < E; ++e) {
      const double v = oracle_logits.at(t * E + e);
      largest = std::max(largest, std::abs(v));
      if (have_floor) floor_err = std::max(floor_err, std::abs(floor_logits->at(t * E + e) - v));
    }
    TieFlip f;
    f.token = t;
    f.band = std::max(kTieFloorK * floor_err, 2 * ulp(storage, largest));
    // Legitimate when the candidate's list is a ranking of the oracle's logits perturbed by no
    // more than the band: distinct experts, each within the band of the oracle's value at its rank.
    std::set<int> seen;
    for (std::int64_t j = 0; j < K; ++j) {
      const double c = cand_ids.at(t * K + j);
      const int id = int(c);
      if (c != std::floor(c) || id < 0 || id >= E || !seen.insert(id).second) return std::nullopt;
      const int o = int(oracle_ids.at(t * K + j));
      f.oracle.push_back(o);
      f.candidate.push_back(id);
      f.margin = std::max(f.margin, std::abs(oracle_logits.at(t * E + id) - oracle_logits.at(t * E + o)));
    }
    if (f.margin > f.band) return std::nullopt;
    for (std::int64_t j = 0; j < K; ++j) out.ids.set(t * K + j, f.candidate[std::size_t(j)]);
    out.flips.push_back(std::move(f));
  }
  if (out.flips.empty()) return std::nullopt;
  return out;
}

std::string tie_note(const TieFlip& f, const ModelConfig& cfg, int step, int layer, Mode mode,
                     const Tensor& oracle_logits) {
  std::vector<std::string> pairs;
  for (std::size_t j = 0; j < f.oracle.size(); ++j)
    if (f.oracle[j] != f.candidate[j])
      pairs.push_back(fmt::format("{} ({:.6g}) for {} ({:.6g})", f.candidate[j],
                                  oracle_logits.at(f.token * cfg.n_experts + f.candidate[j]), f.oracle[j],
                                  oracle_logits.at(f.token * cfg.n_experts + f.oracle[j])));
  return fmt::format(
      "near-tie in the MoE router, step {} layer {} token {} ({}): the candidate chose expert {}, the "
      "oracle's "
      "logits {:.3g} apart, within the tie band {:.3g} ({}x the noise floor's logit error); expert_ids [{}] "
      "accepted for the oracle's [{}], and expert_weights, moe_out{} and residual_2 judged against the "
      "oracle "
      "given that choice",
      step, layer, f.token, mode_name(mode), fmt::join(pairs, ", "), f.margin, f.band, kTieFloorK,
      fmt::join(f.candidate, ", "), fmt::join(f.oracle, ", "), cfg.shared_expert() ? ", ffn_out" : "");
}

}  // namespace ds
