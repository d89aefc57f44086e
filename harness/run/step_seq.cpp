#include "step_seq.h"

#include <fmt/format.h>

#include "moe_ties.h"

namespace ds {

std::unique_ptr<TieInputs> settle_moe_tie(RunState& s, const ModelConfig& cfg, DType storage, int step,
                                          int layer, Seq& q, std::size_t li, const BlockInputs& in,
                                          const Tensor& cand_ids) {
  Lane& lane = q.lanes[li];
  auto r = in.ref->find("expert_ids");
  auto rl = in.ref->find("router_logits");
  if (r == in.ref->end() || rl == in.ref->end()) return nullptr;
  const auto fl = in.floor->find("router_logits");
  const auto check = legitimate_tie_flips(cfg, rl->second, fl == in.floor->end() ? nullptr : &fl->second,
                                          r->second, cand_ids, storage);
  const Tensor& judged = check ? check->ids : r->second;
  const auto fi = in.floor->find("expert_ids");
  const bool floor_differs = fi != in.floor->end() && lane.floor &&
                             fi->second.to(DType::f64).to_f64() != judged.to(DType::f64).to_f64();
  if (!check && !floor_differs) return nullptr;
  if (check)
    for (const TieFlip& f : check->flips) {
      std::string note = tie_note(f, cfg, step, layer, lane.mode, rl->second);
      if (s.features.batch.active()) note += fmt::format(" (sequence {})", q.id);
      s.report.notes.push_back(std::move(note));
    }
  // A chained lane carries its choice into the layers after: from here on it follows its own copy
  // of the sequence's oracle, taken now (this layer's state included), given that choice.
  if (check && lane.mode == Mode::chained && !lane.own_oracle)
    lane.own_oracle = std::make_unique<ref::Reference>(*q.oracle);
  const ref::Reference& oracle = lane.own_oracle ? *lane.own_oracle : *q.oracle;
  TensorMap ref = check ? oracle.moe_given_ids(layer, *in.ref, judged) : *in.ref;
  if (check && lane.own_oracle) lane.own_x = ref.at("residual_2");
  TensorMap floor = floor_differs ? lane.floor->moe_given_ids(layer, *in.floor, judged) : *in.floor;
  return std::make_unique<TieInputs>(std::move(ref), std::move(floor), in);
}

}  // namespace ds
