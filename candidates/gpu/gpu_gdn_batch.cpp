// The Gated DeltaNet conv and recurrence of the gpu candidates in a batched call (run --batch,
// docs/batches.md "State slots"). A decode call (one row per sequence) is one launch of fused
// op D (conv) and op B (GDN) over every sequence, on a recurrent-state slot cache laid out the
// way an engine's is: sequence i writes slot i (rs_head 0) and reads its prior state from the
// slot the harness names (SeqSpan::state_slot, the `ids` entry), so a sequence whose state moved
// goes through the ops' non-identity gather, and a reset reads a zeroed slot. Any other call
// (a prefill, a mixed call, a model without the ids ops) runs each sequence on its own rows.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "dev_buf.h"
#include "f32_stage.h"
#include "gpu_candidate.h"

namespace ds::gpu {

namespace {

// What a slot holds that no sequence of the call has its state in: an engine's cache keeps a
// departed or moved sequence's last state there. A correct op never reads it; one that ignores
// `ids` does, and its output shows it.
constexpr float kStale = 0.25f;

// A sequence's part of a stacked prev: input (n equal parts along dim 0); empty when it is fresh.
Tensor state_of(const Tensor& stacked, const std::vector<SeqSpan>& seqs, std::size_t i) {
  if (stacked.empty() || seqs[i].fresh) return {};
  const std::int64_t rows = stacked.dim(0) / std::int64_t(seqs.size());
  return stacked.rows(std::int64_t(i) * rows, std::int64_t(i + 1) * rows);
}

Tensor stack(const std::vector<Tensor>& parts) {
  Tensor out = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) out = Tensor::concat_rows(out, parts[i]);
  return out;
}

const Tensor& prev_input(const TensorMap& inputs, std::string_view name) {
  auto it = inputs.find(name);
  if (it == inputs.end()) throw std::logic_error(fmt::format("gpu candidate: input '{}' not provided", name));
  return it->second;
}

// A decode call every sequence of which has one row: what ops B and D take in one launch.
bool one_row_each(const StepContext& ctx) {
  return ctx.step > 0 &&
         std::all_of(ctx.seqs.begin(), ctx.seqs.end(), [](const SeqSpan& q) { return q.n_tokens == 1; });
}

// The host image of a call's slot cache and its ids: slots 0..n-1 are the destinations, a
// sequence's prior state sits at its state_slot, one zeroed slot past all of them serves resets.
struct SlotCache {
  std::vector<float> host;
  std::vector<std::int32_t> ids;
};

SlotCache slot_cache(const std::vector<SeqSpan>& seqs, std::size_t slot,
                     const std::function<std::vector<float>(std::size_t)>& prior) {
  int zero = int(seqs.size());
  for (const SeqSpan& q : seqs) zero = std::max(zero, q.state_slot + 1);
  SlotCache c{std::vector<float>(std::size_t(zero + 1) * slot, kStale), {}};
  std::fill_n(c.host.begin() + std::ptrdiff_t(std::size_t(zero) * slot), slot, 0.0f);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const int from = seqs[i].fresh ? -1 : seqs[i].state_slot;
    if (from >= 0) {
      const std::vector<float> s = prior(i);
      std::copy(s.begin(), s.end(), c.host.begin() + std::ptrdiff_t(std::size_t(from) * slot));
    }
    c.ids.push_back(from >= 0 ? from : zero);
  }
  return c;
}

}  // namespace

void GpuCandidate::conv_batch(int layer, const StepContext& ctx, const TensorMap& inputs,
                              TensorMap& out) const {
  const std::vector<SeqSpan>& seqs = ctx.seqs;
  const Tensor& x = step_input(inputs, "qkv_mixed");
  const Tensor& prev = prev_input(inputs, "prev:conv_state");
  if (one_row_each(ctx) && cfg_.gdn_fused.has(Op::SsmConvUpdateIds)) {
    const int n = int(seqs.size()), C = cfg_.gdn_conv_dim(), K = cfg_.conv_kernel;
    const std::size_t slot = std::size_t(C) * (K - 1);
    const SlotCache sc =
        slot_cache(seqs, slot, [&](std::size_t i) { return conv_taps(state_of(prev, seqs, i)); });
    const DevBuf cache(k_, sc.host), ids(k_, sc.ids), scratch(k_, std::size_t(n) * slot * sizeof(float)),
        xd(k_, widen(x)), y(k_, std::size_t(n) * C * sizeof(float));
    k_.ssm_conv_update_ids(cache.f32(), ids.i32(), 0, scratch.f32(), vec(layer, "ssm_conv1d.weight"),
                           xd.f32(), y.f32(), n, C, K, true);
    k_.synchronize();
    std::vector<Tensor> states;
    for (int i = 0; i < n; ++i) states.push_back(conv_state_stage(cache.floats(std::size_t(i) * slot, slot)));
    out["conv"] = f32_stage(y.floats(), n, C);
    out["conv_state"] = stack(states);
    return;
  }
  std::vector<Tensor> convs, states;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    TensorMap one;
    conv_step(layer, ctx.step, x.rows(seqs[i].row0, seqs[i].row0 + seqs[i].n_tokens), state_of(prev, seqs, i),
              one);
    convs.push_back(one.at("conv"));
    states.push_back(one.at("conv_state"));
  }
  out["conv"] = stack(convs);
  out["conv_state"] = stack(states);
}

void GpuCandidate::gdn_batch(const StepContext& ctx, const TensorMap& inputs, TensorMap& out) const {
  const std::vector<SeqSpan>& seqs = ctx.seqs;
  const Tensor& prev = prev_input(inputs, "prev:gdn_state");
  if (one_row_each(ctx) && cfg_.gdn_fused.has(Op::GdnInplaceIds)) {
    const int n = int(seqs.size()), nk = cfg_.gdn_k_heads, nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim,
              dv = cfg_.gdn_v_dim, C = cfg_.gdn_conv_dim(), V = cfg_.gdn_value_dim(),
              v0 = 2 * cfg_.gdn_key_dim();
    const std::size_t slot = std::size_t(nv) * dk * dv;
    const std::vector<float> cv = widen(step_input(inputs, "conv"));
    std::vector<float> v(std::size_t(n) * V);  // the v columns of the conv output
    for (int t = 0; t < n; ++t)
      std::copy_n(cv.begin() + std::ptrdiff_t(std::size_t(t) * C + v0), V, v.begin() + std::ptrdiff_t(t) * V);
    const SlotCache sc =
        slot_cache(seqs, slot, [&](std::size_t i) { return gdn_slot(state_of(prev, seqs, i)); });
    const DevBuf cache(k_, sc.host), ids(k_, sc.ids), scratch(k_, std::size_t(n) * slot * sizeof(float)),
        qd(k_, widen(step_input(inputs, "q_l2"))), kd(k_, widen(step_input(inputs, "k_l2"))), vd(k_, v),
        gd(k_, widen(step_input(inputs, "g"))), bd(k_, widen(step_input(inputs, "beta"))),
        o(k_, std::size_t(n) * V * sizeof(float));
    k_.gdn_inplace_ids(qd.f32(), kd.f32(), vd.f32(), gd.f32(), bd.f32(), cache.f32(), ids.i32(), 0,
                       scratch.f32(), o.f32(), n, nk, nv, dk, dv);
    k_.synchronize();
    std::vector<Tensor> states;
    for (int i = 0; i < n; ++i) states.push_back(gdn_state_stage(cache.floats(std::size_t(i) * slot, slot)));
    out["gdn_out"] = f32_stage(o.floats(), n, V);
    out["gdn_state"] = stack(states);
    return;
  }
  std::vector<Tensor> outs, states;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const SeqSpan& q = seqs[i];
    TensorMap one_in, one;
    for (std::string_view name : {"q_l2", "k_l2", "conv", "g", "beta"})
      one_in[std::string(name)] = step_input(inputs, name).rows(q.row0, q.row0 + q.n_tokens);
    one_in["prev:gdn_state"] = state_of(prev, seqs, i);
    gdn_step(ctx.step, one_in, one);
    outs.push_back(one.at("gdn_out"));
    states.push_back(one.at("gdn_state"));
  }
  out["gdn_out"] = stack(outs);
  out["gdn_state"] = stack(states);
}

}  // namespace ds::gpu
