// The mixture-of-experts steps of the gpu candidates (stage map in gpu_candidate.h; docs/moe.md):
// the fused routing kernel (kernels/moe_route.cu) and the grouped experts with the f32 combine and
// its chain-add epilogue (kernels/moe_experts.cu). The norm before them is the decoder's ffn_norm.
#include <fmt/format.h>

#include <stdexcept>

#include "dev_buf.h"
#include "gpu_candidate.h"

namespace ds::gpu {

std::vector<KernelStep> GpuCandidate::moe_steps() {
  return {{"ffn_norm", {"residual_1"}, {"ffn_norm"}},
          {"moe_route", {"ffn_norm"}, {"router_logits", "expert_ids", "expert_weights"}},
          {"moe_experts_add",
           {"ffn_norm", "expert_ids", "expert_weights", "residual_1"},
           {"moe_out", "residual_2"}}};
}

void GpuCandidate::load_moe(int l, const WeightStore& weights) {
  if (cfg_.n_experts_used > dsk::kMoeMaxTopK || cfg_.n_experts > dsk::kMoeMaxExperts)
    throw std::runtime_error(
        fmt::format("{}: kernels/moe_route.cu ranks at most {} experts and keeps a top-{}", name_,
                    dsk::kMoeMaxExperts, dsk::kMoeMaxTopK));
  // Stacked [experts, out, in] as stored: read in place on SIMT, one copy each on a GPU.
  for (std::string_view m :
       {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"})
    upload_matrix(layer_weight(l, m), {&weights.layer(l, m)});
  upload_vector(layer_weight(l, "ffn_norm.weight"), weights.layer(l, "ffn_norm.weight"));
  const dsk::WType wt = dev_.at(layer_weight(l, "ffn_gate_exps.weight")).wt;
  for (std::string_view m : {"ffn_up_exps.weight", "ffn_down_exps.weight"})
    if (dev_.at(layer_weight(l, m)).wt != wt)
      throw std::runtime_error(
          fmt::format("{}: layer {}'s expert matrices are stored in different dtypes; "
                      "kernels/moe_experts.cu reads all three in one",
                      name_, l));
}

bool GpuCandidate::run_moe(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                           TensorMap& outputs) {
  const std::string& s = step.name;
  if (s != "moe_route" && s != "moe_experts_add") return false;
  const ModelConfig& c = cfg_;
  const int l = ctx.layer, T = ctx.n_tokens, D = c.hidden, E = c.n_experts, K = c.n_experts_used;
  auto wt_of = [&](std::string_view role) { return dev_.at(layer_weight(l, role)).wt; };
  if (s == "moe_route") {
    DevBuf x(k_, step_input(inputs, "ffn_norm")), logits(k_, std::size_t(T) * E * 2),
        ids(k_, std::size_t(T) * K * 4), weights(k_, std::size_t(T) * K * 2);
    const dsk::MoeRule rule =
        c.moe_routing == MoeRouting::softmax_topk ? dsk::MoeRule::softmax_topk : dsk::MoeRule::topk_softmax;
    k_.moe_route(mat(l, "ffn_gate_inp.weight"), wt_of("ffn_gate_inp.weight"), x.get(), logits.get(),
                 ids.i32(), weights.get(), T, E, D, K, rule, c.moe_norm_topk);
    k_.synchronize();
    std::vector<std::int32_t> chosen(std::size_t(T) * K);
    k_.to_host(chosen.data(), ids.get(), chosen.size() * 4);
    // Ids are exact integers, never rounded to the storage dtype (f32 holds every expert index).
    Tensor id_stage(DType::f32, {T, K});
    for (std::size_t i = 0; i < chosen.size(); ++i) id_stage.set(std::int64_t(i), chosen[i]);
    outputs["router_logits"] = logits.f16(T, E);
    outputs["expert_ids"] = id_stage;
    outputs["expert_weights"] = weights.f16(T, K);
    return true;
  }
  // moe_experts_add: the ids arrive as the lane holds them (f16 in isolated mode, our f32 chained).
  const auto id_input = inputs.find("expert_ids");
  if (id_input == inputs.end())
    throw std::logic_error(fmt::format("{}: input 'expert_ids' not provided", name_));
  const Tensor& id_t = id_input->second;
  if (id_t.numel() != std::int64_t(T) * K)
    throw std::logic_error(
        fmt::format("{}: expert_ids holds {} ids, expected {}", name_, id_t.numel(), T * K));
  std::vector<std::int32_t> ids(std::size_t(T) * K);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const double e = id_t.at(std::int64_t(i));
    if (!(e >= 0 && e < E) || e != double(std::int32_t(e)))
      throw std::out_of_range(fmt::format("{}: expert id {} of {}", name_, e, E));
    ids[i] = std::int32_t(e);
  }
  DevBuf x(k_, step_input(inputs, "ffn_norm")), w(k_, step_input(inputs, "expert_weights")),
      resid(k_, step_input(inputs, "residual_1")), id_dev(k_, ids), out(k_, std::size_t(T) * D * 2),
      scratch(k_, dsk::moe_scratch_bytes(T, K, E, c.expert_ffn, D));
  k_.moe_experts(mat(l, "ffn_gate_exps.weight"), mat(l, "ffn_up_exps.weight"), mat(l, "ffn_down_exps.weight"),
                 wt_of("ffn_gate_exps.weight"), x.get(), id_dev.i32(), w.get(), out.get(), resid.get(),
                 scratch.get(), T, K, E, c.expert_ffn, D);
  k_.synchronize();
  outputs["moe_out"] = out.f16(T, D);
  outputs["residual_2"] = resid.f16(T, D);
  return true;
}

}  // namespace ds::gpu
