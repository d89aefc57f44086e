// The mixture-of-experts steps of the gpu candidates (stage map in gpu_candidate.h; docs/moe.md):
// the fused routing kernel (kernels/moe_route.cu) and the grouped experts with the f32 combine and
// its chain-add epilogue (kernels/moe_experts.cu). The norm before them is the decoder's ffn_norm.
// Qwen3-Next's shared expert runs on the same grouped experts kernel as one expert every token
// chose at weight 1, and its gate, the FFN's sum and the residual add on kernels/moe_shexp.cu.
#include <fmt/format.h>

#include <stdexcept>

#include "dev_buf.h"
#include "gpu_candidate.h"

namespace ds::gpu {

std::vector<KernelStep> GpuCandidate::moe_steps(bool shared_expert) {
  std::vector<KernelStep> p = {
      {"ffn_norm", {"residual_1"}, {"ffn_norm"}},
      {"moe_route", {"ffn_norm"}, {"router_logits", "expert_ids", "expert_weights"}}};
  if (!shared_expert) {
    p.push_back({"moe_experts_add",
                 {"ffn_norm", "expert_ids", "expert_weights", "residual_1"},
                 {"moe_out", "residual_2"}});
    return p;
  }
  // The residual add moves to the last step: it adds ffn_out, not moe_out.
  p.push_back({"moe_experts", {"ffn_norm", "expert_ids", "expert_weights"}, {"moe_out"}});
  p.push_back({"shexp", {"ffn_norm"}, {"shexp_out"}});
  p.push_back({"shexp_gate_add",
               {"ffn_norm", "moe_out", "shexp_out", "residual_1"},
               {"shexp_gate", "ffn_out", "residual_2"}});
  return p;
}

void GpuCandidate::load_moe(int l, const WeightStore& weights) {
  if (cfg_.n_experts_used > dsk::kMoeMaxTopK || cfg_.n_experts > dsk::kMoeMaxExperts)
    throw std::runtime_error(
        fmt::format("{}: kernels/moe_route.cu ranks at most {} experts and keeps a top-{}", name_,
                    dsk::kMoeMaxExperts, dsk::kMoeMaxTopK));
  // Stacked [experts, out, in] as stored (block-quantized ones in their blocks): read in place on
  // SIMT, one copy each on a GPU.
  for (std::string_view m : {"ffn_gate_inp.weight", "ffn_down_exps.weight"})
    upload_weight(layer_weight(l, m), weights, layer_weight(l, m));
  upload_gate_up(l, weights, "ffn_gate_exps.weight", "ffn_up_exps.weight");
  upload_vector(layer_weight(l, "ffn_norm.weight"), weights.layer(l, "ffn_norm.weight"));
  if (!cfg_.shared_expert()) return;
  // The shared expert's [F, D] / [D, F] matrices are the stacked [1, F, D] / [1, D, F] of one
  // expert as stored, read in place on SIMT like the routed ones; the gate [1, D] likewise.
  for (std::string_view m : {"ffn_down_shexp.weight", "ffn_gate_inp_shexp.weight"})
    upload_weight(layer_weight(l, m), weights, layer_weight(l, m));
  upload_gate_up(l, weights, "ffn_gate_shexp.weight", "ffn_up_shexp.weight");
}

void GpuCandidate::upload_gate_up(int l, const WeightStore& weights, std::string_view gate,
                                  std::string_view up) {
  // kernels/moe_experts.cu reads gate and up with one type (down has its own): stored in two, both
  // go up as f32.
  const std::string g = layer_weight(l, gate), u = layer_weight(l, up);
  upload_weight(g, weights, g);
  upload_weight(u, weights, u);
  if (dev_.at(g).wt == dev_.at(u).wt) return;
  for (const std::string& m : {g, u}) {
    if (!dev_.at(m).borrowed) k_.release(dev_.at(m).p);
    dev_.erase(m);
    upload_matrix(m, {&weights.get(m)}, true);
  }
}

bool GpuCandidate::run_moe(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                           TensorMap& outputs) {
  const std::string& s = step.name;
  if (s == "shexp" || s == "shexp_gate_add") return run_shared_expert(step, ctx, inputs, outputs);
  if (s != "moe_route" && s != "moe_experts_add" && s != "moe_experts") return false;
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
  // moe_experts(_add): the ids arrive as the lane holds them (f16 in isolated mode, our f32 chained).
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
  const bool add = s == "moe_experts_add";  // the residual add fused, as without a shared expert
  DevBuf x(k_, step_input(inputs, "ffn_norm")), w(k_, step_input(inputs, "expert_weights")),
      resid = add ? DevBuf(k_, step_input(inputs, "residual_1")) : DevBuf(k_, std::size_t(0)),
      id_dev(k_, ids), out(k_, std::size_t(T) * D * 2),
      scratch(k_, dsk::moe_scratch_bytes(T, K, E, c.expert_ffn, D));
  k_.moe_experts(mat(l, "ffn_gate_exps.weight"), mat(l, "ffn_up_exps.weight"), mat(l, "ffn_down_exps.weight"),
                 wt_of("ffn_gate_exps.weight"), wt_of("ffn_down_exps.weight"), x.get(), id_dev.i32(), w.get(),
                 out.get(), add ? resid.get() : nullptr, scratch.get(), T, K, E, c.expert_ffn, D);
  k_.synchronize();
  outputs["moe_out"] = out.f16(T, D);
  if (add) outputs["residual_2"] = resid.f16(T, D);
  return true;
}

bool GpuCandidate::run_shared_expert(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                                     TensorMap& outputs) {
  const int l = ctx.layer, T = ctx.n_tokens, D = cfg_.hidden, F = cfg_.shared_expert_ffn;
  auto wt_of = [&](std::string_view role) { return dev_.at(layer_weight(l, role)).wt; };
  DevBuf x(k_, step_input(inputs, "ffn_norm"));
  if (step.name == "shexp") {
    // One expert (E = 1) that each token chose once (k = 1) at weight 1 (exact in half): the
    // combine is then the expert's f32 output itself, rounded once.
    const std::vector<std::int32_t> only(std::size_t(T), 0);
    const Tensor ones = Tensor::from_f64({T, 1}, std::vector<double>(std::size_t(T), 1.0), DType::f16);
    DevBuf ids(k_, only), w(k_, ones), out(k_, std::size_t(T) * D * 2),
        scratch(k_, dsk::moe_scratch_bytes(T, 1, 1, F, D));
    k_.moe_experts(mat(l, "ffn_gate_shexp.weight"), mat(l, "ffn_up_shexp.weight"),
                   mat(l, "ffn_down_shexp.weight"), wt_of("ffn_gate_shexp.weight"),
                   wt_of("ffn_down_shexp.weight"), x.get(), ids.i32(), w.get(), out.get(), nullptr,
                   scratch.get(), T, 1, 1, F, D);
    k_.synchronize();
    outputs["shexp_out"] = out.f16(T, D);
    return true;
  }
  DevBuf moe(k_, step_input(inputs, "moe_out")), sh(k_, step_input(inputs, "shexp_out")),
      resid(k_, step_input(inputs, "residual_1")), gate(k_, std::size_t(T) * 2),
      out(k_, std::size_t(T) * D * 2);
  k_.moe_shexp_gate_add(mat(l, "ffn_gate_inp_shexp.weight"), wt_of("ffn_gate_inp_shexp.weight"), x.get(),
                        moe.get(), sh.get(), gate.get(), out.get(), resid.get(), T, D);
  k_.synchronize();
  outputs["shexp_gate"] = gate.f16(T, 1);
  outputs["ffn_out"] = out.f16(T, D);
  outputs["residual_2"] = resid.f16(T, D);
  return true;
}

}  // namespace ds::gpu
