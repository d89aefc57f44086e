// The Qwen3-Next steps of the gpu candidates (stage maps in gpu_candidate.h): the gated
// full-attention q projection and output gate, and the Gated DeltaNet layer, every one a
// launch of kernels/*.cu. The norms, rope, attention, chain-add projections and the MLP are
// the decoder's steps in gpu_candidate.cpp.
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "dev_buf.h"
#include "f32_stage.h"
#include "gpu_candidate.h"
#include "stage_catalog.h"

namespace ds::gpu {

namespace {

std::vector<float> zeros(std::size_t n) { return std::vector<float>(n, 0.0f); }

// prev:<state> is empty at the prefill (zero state).
const Tensor* prev_state(const TensorMap& inputs, std::string_view name) {
  auto it = inputs.find(name);
  if (it == inputs.end()) throw std::logic_error(fmt::format("gpu candidate: input '{}' not provided", name));
  return it->second.empty() ? nullptr : &it->second;
}

}  // namespace

void GpuCandidate::load_gdn_layer(int l, const WeightStore& weights) {
  if (cfg_.gdn_head_map != GdnHeadMap::grouped)
    throw std::runtime_error(fmt::format(
        "{}: kernels/gdn.cu implements the grouped GDN head map only (value head h reads key head "
        "h / rho), not the tiled one this model uses",
        name_));
  if (cfg_.conv_state_rows() != cfg_.conv_kernel - 1)
    throw std::runtime_error(fmt::format("{}: kernels/ssm_conv.cu keeps K-1 conv taps (ggml layout)", name_));
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  // [in_proj_qkv | in_proj_z] and [in_proj_b | in_proj_a]: one buffer each, one launch each.
  upload_packed(n("gdn_qkvz.packed"), weights, {n("attn_qkv.weight"), n("attn_gate.weight")});
  upload_packed(n("gdn_ba.packed"), weights, {n("ssm_beta.weight"), n("ssm_alpha.weight")});
  upload_weight(n("ssm_out.weight"), weights, n("ssm_out.weight"));
  for (std::string_view v :
       {"attn_norm.weight", "ssm_a", "ssm_dt.bias", "ssm_conv1d.weight", "ssm_norm.weight"})
    upload_vector(n(v), weights.layer(l, v));
  if (cfg_.moe())
    load_moe(l, weights);
  else
    load_mlp(l, weights);
}

bool GpuCandidate::run_hybrid(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                              TensorMap& outputs) {
  const ModelConfig& c = cfg_;
  const int l = ctx.layer, T = ctx.n_tokens, D = c.hidden;
  const std::string& s = step.name;
  auto up = [&](std::string_view name) { return DevBuf(k_, step_input(inputs, name)); };
  auto buf = [&](std::int64_t elems) { return DevBuf(k_, std::size_t(elems) * 2); };
  auto wt_of = [&](std::string_view role) { return dev_.at(layer_weight(l, role)).wt; };

  if (s == "q_proj") {
    // Gated attention: q_proj's rows are [q | gate] per head, so its output row is too.
    const int Q = c.q_dim(), KV = c.kv_dim(), d = c.head_dim, H = c.n_heads;
    DevBuf x = up("attn_norm"), qg = buf(std::int64_t(T) * 2 * Q), k = buf(std::int64_t(T) * KV),
           v = buf(std::int64_t(T) * KV);
    qkv_projection(l, x.get(), qg.get(), k.get(), v.get(), T, 2 * Q, KV, D);
    const Tensor both = qg.f16(T, 2 * Q);
    outputs["q"] = f16_blocks(both, 0, d, 2 * d, H);
    outputs["attn_gate"] = f16_blocks(both, d, d, 2 * d, H);
    outputs["k"] = k.f16(T, KV);
    outputs["v"] = v.f16(T, KV);
  } else if (s == "attn_gate_mul") {
    const int Q = c.q_dim();
    DevBuf a = up("attn"), g = up("attn_gate"), y = buf(std::int64_t(T) * Q);
    k_.attn_gate(a.get(), g.get(), y.get(), T * Q);
    outputs["attn_gated"] = y.f16(T, Q);
  } else if (s == "gdn_in_proj") {
    const int C = c.gdn_conv_dim(), V = c.gdn_value_dim(), nv = c.gdn_v_heads;
    DevBuf x = up("attn_norm"), qz = buf(std::int64_t(T) * (C + V)), beta = buf(std::int64_t(T) * nv),
           g = buf(std::int64_t(T) * nv);
    k_.gemv(mat(l, "gdn_qkvz.packed"), wt_of("gdn_qkvz.packed"), x.get(), nullptr, qz.get(), nullptr, T,
            C + V, D);
    const dsk::WType wt = wt_of("gdn_ba.packed");
    const char* wb = static_cast<const char*>(mat(l, "gdn_ba.packed"));
    k_.gdn_gates(wb, wb + std::size_t(nv) * D * (wt == dsk::WType::f32 ? 4 : 2), wt, need_vec(l, "ssm_a"),
                 need_vec(l, "ssm_dt.bias"), x.get(), beta.get(), g.get(), T, nv, D);
    const Tensor both = qz.f16(T, C + V);
    outputs["qkv_mixed"] = f16_columns(both, 0, C);
    outputs["z_gate"] = f16_columns(both, C, V);
    outputs["beta"] = beta.f16(T, nv);
    outputs["g"] = g.f16(T, nv);
  } else if (s == "conv") {
    if (!ctx.seqs.empty()) {
      conv_batch(l, ctx, inputs, outputs);
    } else {
      const Tensor* prev = prev_state(inputs, "prev:conv_state");
      conv_step(l, ctx.step, step_input(inputs, "qkv_mixed"), prev != nullptr ? *prev : Tensor{}, outputs);
    }
  } else if (s == "l2norm") {
    const int C = c.gdn_conv_dim(), KD = c.gdn_key_dim();
    DevBuf cv = up("conv"), q = buf(std::int64_t(T) * KD), k = buf(std::int64_t(T) * KD);
    k_.l2norm(cv.get(), C, q.get(), k.get(), T, c.gdn_k_heads, c.gdn_k_dim,
              1.0f / std::sqrt(float(c.gdn_k_dim)));
    outputs["q_l2"] = q.f16(T, KD);
    outputs["k_l2"] = k.f16(T, KD);
  } else if (s == "gdn") {
    if (!ctx.seqs.empty())
      gdn_batch(ctx, inputs, outputs);
    else
      gdn_step(ctx.step, inputs, outputs);
  } else if (s == "gated_norm") {
    const int V = c.gdn_value_dim();
    DevBuf o = up("gdn_out"), z = up("z_gate"), y = buf(std::int64_t(T) * V);
    k_.gated_rmsnorm(o.get(), z.get(), need_vec(l, "ssm_norm.weight"), y.get(), T, c.gdn_v_heads, c.gdn_v_dim,
                     float(c.norm_eps));
    outputs["gated_norm"] = y.f16(T, V);
  } else {
    return false;
  }
  k_.synchronize();
  return true;
}

// The causal conv + SiLU of one layer, with the conv state in the kernels' [C, K-1] layout.
void GpuCandidate::conv_step(int layer, int step, const Tensor& xt, const Tensor& prev,
                             TensorMap& out) const {
  const int T = int(xt.dim(0)), C = cfg_.gdn_conv_dim(), K = cfg_.conv_kernel, S = K - 1;
  const std::size_t slot = std::size_t(C) * S;
  const std::vector<float> taps = conv_taps(prev);  // [C, S], oldest first
  const std::vector<float> x = widen(xt);           // [T, C]
  const float* w = vec(layer, "ssm_conv1d.weight");
  const DevBuf y(k_, std::size_t(T) * C * sizeof(float));
  std::vector<float> next(slot);
  const bool decode = T == 1 && step > 0;
  if (decode && cfg_.gdn_fused.has(Op::SsmConvUpdateIds)) {
    // Op D over a 2-slot cache, destination slot 0; odd steps read the prior taps from slot 1.
    const int src = step % 2;
    const DevBuf cache(k_, zeros(2 * slot)), scratch(k_, slot * sizeof(float)), xd(k_, x);
    cache.put(taps, std::size_t(src) * slot);
    const DevBuf ids(k_, std::vector<std::int32_t>{src});
    k_.ssm_conv_update_ids(cache.f32(), ids.i32(), 0, scratch.f32(), w, xd.f32(), y.f32(), 1, C, K, true);
    next = cache.floats(0, slot);
  } else if (decode && cfg_.gdn_fused.has(Op::SsmConvUpdate)) {
    const DevBuf in_taps(k_, taps), dst(k_, zeros(slot)), xd(k_, x);  // op C
    k_.ssm_conv_update(in_taps.f32(), w, xd.f32(), dst.f32(), y.f32(), 1, C, K, true);
    next = dst.floats();
  } else {
    // Plain: the pre-concatenated window [taps | x] per channel; the next taps are its last S.
    std::vector<float> sx(std::size_t(C) * (S + T));
    for (int c = 0; c < C; ++c) {
      float* win = &sx[std::size_t(c) * (S + T)];
      for (int i = 0; i < S; ++i) win[i] = taps[std::size_t(c) * S + i];
      for (int t = 0; t < T; ++t) win[S + t] = x[std::size_t(t) * C + c];
      for (int i = 0; i < S; ++i) next[std::size_t(c) * S + i] = win[T + i];
    }
    const DevBuf sxd(k_, sx);
    k_.ssm_conv(sxd.f32(), w, y.f32(), 1, T, C, K, true);
  }
  k_.synchronize();
  out["conv"] = f32_stage(y.floats(), T, C);
  out["conv_state"] = conv_state_stage(next);
}

std::vector<float> GpuCandidate::conv_taps(const Tensor& prev) const {
  const int C = cfg_.gdn_conv_dim(), S = cfg_.conv_kernel - 1;
  std::vector<float> taps = zeros(std::size_t(C) * S);
  if (prev.empty()) return taps;
  const std::vector<float> p = widen(prev);  // [S, C]
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < C; ++c) taps[std::size_t(c) * S + r] = p[std::size_t(r) * C + c];
  return taps;
}

Tensor GpuCandidate::conv_state_stage(const std::vector<float>& taps) const {
  const int C = cfg_.gdn_conv_dim(), S = cfg_.conv_kernel - 1;
  std::vector<float> st(std::size_t(C) * S);  // [S, C], oldest row first
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < C; ++c) st[std::size_t(r) * C + c] = taps[std::size_t(c) * S + r];
  return f32_stage(st, S, C);
}

// The recurrence of one layer; the state in the kernels' [nv, dk, dv] layout.
void GpuCandidate::gdn_step(int step, const TensorMap& inputs, TensorMap& out) const {
  const int nk = cfg_.gdn_k_heads, nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim, dv = cfg_.gdn_v_dim;
  const int C = cfg_.gdn_conv_dim(), V = cfg_.gdn_value_dim(), v0 = 2 * cfg_.gdn_key_dim();
  const Tensor& conv = step_input(inputs, "conv");
  const int T = int(conv.dim(0));
  const std::vector<float> cv = widen(conv);
  std::vector<float> v(std::size_t(T) * V);  // the v columns of the conv output
  for (int t = 0; t < T; ++t)
    std::copy_n(cv.begin() + std::ptrdiff_t(std::size_t(t) * C + v0), V, v.begin() + std::ptrdiff_t(t) * V);
  const std::size_t slot = std::size_t(nv) * dk * dv;
  const Tensor* prev = prev_state(inputs, "prev:gdn_state");
  const std::vector<float> s0 = gdn_slot(prev != nullptr ? *prev : Tensor{});
  const DevBuf qd(k_, widen(step_input(inputs, "q_l2"))), kd(k_, widen(step_input(inputs, "k_l2"))),
      vd(k_, v), gd(k_, widen(step_input(inputs, "g"))), bd(k_, widen(step_input(inputs, "beta"))),
      o(k_, std::size_t(T) * V * sizeof(float));
  std::vector<float> s1;
  const bool decode = T == 1 && step > 0;
  if (decode && cfg_.gdn_fused.has(Op::GdnInplaceIds)) {
    // Op B over a 2-slot cache, destination slot 0; odd steps read the prior state from slot 1.
    const int src = step % 2;
    const DevBuf cache(k_, zeros(2 * slot)), scratch(k_, slot * sizeof(float));
    cache.put(s0, std::size_t(src) * slot);
    const DevBuf ids(k_, std::vector<std::int32_t>{src});
    k_.gdn_inplace_ids(qd.f32(), kd.f32(), vd.f32(), gd.f32(), bd.f32(), cache.f32(), ids.i32(), 0,
                       scratch.f32(), o.f32(), 1, nk, nv, dk, dv);
    s1 = cache.floats(0, slot);
  } else if (decode && cfg_.gdn_fused.has(Op::GdnInplace)) {
    const DevBuf cache(k_, s0);  // op A: the state slot read and rewritten in place
    k_.gdn_inplace(qd.f32(), kd.f32(), vd.f32(), gd.f32(), bd.f32(), cache.f32(), o.f32(), 1, nk, nv, dk, dv);
    s1 = cache.floats();
  } else {
    const DevBuf si(k_, s0), so(k_, slot * sizeof(float));
    k_.gdn(qd.f32(), kd.f32(), vd.f32(), gd.f32(), bd.f32(), si.f32(), so.f32(), o.f32(), 1, T, nk, nv, dk,
           dv);
    s1 = so.floats();
  }
  k_.synchronize();
  out["gdn_out"] = f32_stage(o.floats(), T, V);
  out["gdn_state"] = gdn_state_stage(s1);
}

std::vector<float> GpuCandidate::gdn_slot(const Tensor& prev) const {
  const int nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim, dv = cfg_.gdn_v_dim;
  const bool key_major = cfg_.gdn_state_layout == GdnStateLayout::key_major;
  std::vector<float> s0 = zeros(std::size_t(nv) * dk * dv);
  if (prev.empty()) return s0;
  const std::vector<float> p = widen(prev);
  for (int h = 0; h < nv; ++h)
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j)
        s0[(std::size_t(h) * dk + i) * dv + j] =
            p[key_major ? (std::size_t(h) * dk + i) * dv + j : (std::size_t(h) * dv + j) * dk + i];
  return s0;
}

Tensor GpuCandidate::gdn_state_stage(const std::vector<float>& s1) const {
  const int nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim, dv = cfg_.gdn_v_dim;
  const bool key_major = cfg_.gdn_state_layout == GdnStateLayout::key_major;
  std::vector<float> st(std::size_t(nv) * dk * dv);
  for (int h = 0; h < nv; ++h)
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j)
        st[key_major ? (std::size_t(h) * dk + i) * dv + j : (std::size_t(h) * dv + j) * dk + i] =
            s1[(std::size_t(h) * dk + i) * dv + j];
  return f32_stage(st, key_major ? std::int64_t(nv) * dk : std::int64_t(nv) * dv, key_major ? dv : dk);
}

}  // namespace ds::gpu
