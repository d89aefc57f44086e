#include "gdn_candidate.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "mat_io.h"
#include "launch_sinks.h"
#include "stage_catalog.h"

namespace ds::gpu {

using cpu::columns;
using cpu::input;
using cpu::Mat;
using cpu::to_f16;
using cpu::to_mat;

namespace {

Mat to_mat(std::vector<float> v, std::int64_t rows, std::int64_t cols) {
  Mat m;
  m.rows = rows;
  m.cols = cols;
  m.v = std::move(v);
  return m;
}
const Tensor& in(const TensorMap& inputs, std::string_view name) { return input(inputs, name, "simt-gdn"); }
float sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float siluf(float x) { return x * sigmoidf(x); }
float softplusf(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// A device f32 / i32 buffer for one call.
template <class T>
class Dev {
 public:
  Dev(const dsk::KernelTable& k, std::size_t n)
      : k_(&k), n_(n), p_(static_cast<T*>(k.alloc(n * sizeof(T)))) {}
  Dev(const dsk::KernelTable& k, const std::vector<T>& v) : Dev(k, v.size()) {
    k.to_device(p_, v.data(), n_ * sizeof(T));
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { k_->release(p_); }
  T* p() const { return p_; }
  std::vector<T> get(std::size_t from = 0, std::size_t n = 0) const {
    std::vector<T> v(n == 0 ? n_ - from : n);
    k_->to_host(v.data(), p_ + from, v.size() * sizeof(T));
    return v;
  }
  void put(const std::vector<T>& v, std::size_t at) const {
    k_->to_device(p_ + at, v.data(), v.size() * sizeof(T));
  }

 private:
  const dsk::KernelTable* k_;
  std::size_t n_;
  T* p_;
};

std::vector<float> zeros(std::size_t n) { return std::vector<float>(n, 0.0f); }

}  // namespace

GdnCandidate::GdnCandidate(const dsk::KernelTable& table, std::string name, std::string description,
                           bool fused_ops, int bug)
    : k_(table),
      name_(std::move(name)),
      description_(std::move(description)),
      fused_ops_(fused_ops),
      bug_(bug) {}

OpSet GdnCandidate::capabilities() const {
  OpSet ops{Op::RoPE,    Op::RoPENeox,   Op::RoPEPartial,    Op::RoPEFreqFactors, Op::GQA,
            Op::MHA,     Op::CausalMask, Op::SwiGLU,         Op::RMSNorm,         Op::RMSNormPlusOne,
            Op::BiasAdd, Op::QkNorm,     Op::AttnOutputGate, Op::GatedDeltaNet,   Op::SsmConv};
  if (fused_ops_)
    for (Op op : {Op::GdnInplace, Op::GdnInplaceIds, Op::SsmConvUpdate, Op::SsmConvUpdateIds}) ops.add(op);
  return ops;
}

std::vector<KernelStep> GdnCandidate::plan(const ModelConfig&, BlockKind kind) const {
  const std::vector<KernelStep> mlp = {{"ffn_norm", {"residual_1"}, {"ffn_norm"}},
                                       {"gate_up", {"ffn_norm"}, {"gate", "up"}},
                                       {"swiglu", {"gate", "up"}, {"ffn_act"}},
                                       {"down_add", {"ffn_act", "residual_1"}, {"down", "residual_2"}}};
  std::vector<KernelStep> p;
  switch (kind) {
    case BlockKind::embed: return {{"embedding", {"tokens"}, {"embed"}}};
    case BlockKind::head:
      return {{"final_norm", {"x"}, {"final_norm"}}, {"lm_head", {"final_norm"}, {"logits"}}};
    case BlockKind::gdn:
      p = {{"attn_norm", {"x"}, {"attn_norm"}},
           {"gdn_in_proj", {"attn_norm"}, {"qkv_mixed", "z_gate", "beta", "g"}},
           {"conv", {"qkv_mixed", "prev:conv_state"}, {"conv", "conv_state"}},
           {"l2norm", {"conv"}, {"q_l2", "k_l2"}},
           {"gdn", {"q_l2", "k_l2", "conv", "g", "beta", "prev:gdn_state"}, {"gdn_out", "gdn_state"}},
           {"gated_norm", {"gdn_out", "z_gate"}, {"gated_norm"}},
           {"out_proj_add", {"gated_norm", "x"}, {"out_proj", "residual_1"}}};
      break;
    case BlockKind::gated_attn:
      p = {{"attn_norm", {"x"}, {"attn_norm"}},
           {"q_proj", {"attn_norm"}, {"q", "attn_gate", "k", "v"}},
           {"qk_norm", {"q", "k"}, {"q_norm", "k_norm"}},
           {"rope", {"q_norm", "k_norm"}, {"q_rope", "k_rope"}},
           {"attention", {"q_rope", "cache:k_rope", "cache:v"}, {"attn"}},
           {"attn_gate_mul", {"attn", "attn_gate"}, {"attn_gated"}},
           {"o_proj_add", {"attn_gated", "x"}, {"attn_out", "residual_1"}}};
      break;
    default: return {};  // refused by the capability gate first
  }
  p.insert(p.end(), mlp.begin(), mlp.end());
  return p;
}

std::string GdnCandidate::unavailable() const { return k_.device_error(); }

void GdnCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  if (const std::string why = k_.device_error(); !why.empty()) throw std::runtime_error(why);
  launch_sinks::start(k_.backend);
  if (cfg.gdn_head_map != GdnHeadMap::grouped)
    throw std::runtime_error(
        fmt::format("{}: kernels/gdn.cu implements the grouped GDN head map only", name_));
  if (cfg.conv_state_rows() != cfg.conv_kernel - 1)
    throw std::runtime_error(fmt::format("{}: kernels/ssm_conv.cu keeps K-1 conv taps (ggml layout)", name_));
  cfg_ = cfg;
  w_.clear();
  for (const char* n : {"token_embd.weight", "output.weight", "output_norm.weight"})
    if (const Tensor* t = weights.find(n)) w_[n] = to_mat(*t);
  static const char* const kRoles[] = {"attn_norm.weight",   "attn_qkv.weight",    "attn_gate.weight",
                                       "ssm_beta.weight",    "ssm_alpha.weight",   "ssm_a",
                                       "ssm_dt.bias",        "ssm_conv1d.weight",  "ssm_norm.weight",
                                       "ssm_out.weight",     "attn_q.weight",      "attn_k.weight",
                                       "attn_v.weight",      "attn_q.bias",        "attn_k.bias",
                                       "attn_v.bias",        "attn_q_norm.weight", "attn_k_norm.weight",
                                       "attn_output.weight", "attn_output.bias",   "ffn_norm.weight",
                                       "ffn_gate.weight",    "ffn_up.weight",      "ffn_down.weight",
                                       "ffn_gate.bias",      "ffn_up.bias",        "ffn_down.bias"};
  for (int l = 0; l < cfg.n_layers; ++l)
    for (const char* role : kRoles)
      if (const Tensor* t = weights.find_layer(l, role)) w_[layer_weight(l, role)] = to_mat(*t);
}

const Mat* GdnCandidate::w_opt(int layer, std::string_view role) const {
  auto it = w_.find(layer == kModelLayer ? std::string(role) : layer_weight(layer, role));
  return it == w_.end() ? nullptr : &it->second;
}
const Mat& GdnCandidate::w(int layer, std::string_view role) const {
  if (const Mat* m = w_opt(layer, role)) return *m;
  throw std::out_of_range(fmt::format("{}: weight '{}' not loaded", name_, role));
}
std::vector<float> GdnCandidate::norm_w(int layer, std::string_view role) const {
  std::vector<float> v = w(layer, role).v;
  if (cfg_.norm_plus_one)
    for (float& e : v) e += 1.0f;
  return v;
}

// The causal conv + SiLU of one layer, with the conv state in the kernels' [C, K-1] layout.
void GdnCandidate::conv_step(int layer, int step, const Tensor& xt, const Tensor& prev,
                             TensorMap& out) const {
  const int T = int(xt.dim(0)), C = cfg_.gdn_conv_dim(), K = cfg_.conv_kernel, S = K - 1;
  const std::size_t slot = std::size_t(C) * S;
  std::vector<float> taps = zeros(slot);  // [C, S], oldest first
  if (!prev.empty())
    for (int r = 0; r < S; ++r)
      for (int c = 0; c < C; ++c) taps[std::size_t(c) * S + r] = float(prev.at(std::int64_t(r) * C + c));
  const Mat x = to_mat(xt);
  const Dev<float> wd(k_, w(layer, "ssm_conv1d.weight").v), y(k_, std::size_t(T) * C);
  std::vector<float> next(slot);
  const bool decode = T == 1 && step > 0;
  if (decode && cfg_.gdn_fused.has(Op::SsmConvUpdateIds)) {
    // Op D over a 2-slot cache, destination slot 0; odd steps read the prior taps from slot 1.
    const int src = step % 2;
    const Dev<float> cache(k_, zeros(2 * slot)), scratch(k_, slot), xd(k_, x.v);
    cache.put(taps, std::size_t(src) * slot);
    const Dev<std::int32_t> ids(k_, std::vector<std::int32_t>{src});
    k_.ssm_conv_update_ids(cache.p(), ids.p(), 0, scratch.p(), wd.p(), xd.p(), y.p(), 1, C, K, true, bug_);
    next = cache.get(0, slot);
  } else if (decode && cfg_.gdn_fused.has(Op::SsmConvUpdate)) {
    const Dev<float> in_taps(k_, taps), dst(k_, zeros(slot)), xd(k_, x.v);  // op C
    k_.ssm_conv_update(in_taps.p(), wd.p(), xd.p(), dst.p(), y.p(), 1, C, K, true, bug_);
    next = dst.get();
  } else {
    // Plain: the pre-concatenated window [taps | x] per channel, then the ring on the host.
    std::vector<float> sx(std::size_t(C) * (S + T));
    for (int c = 0; c < C; ++c) {
      float* win = &sx[std::size_t(c) * (S + T)];
      for (int i = 0; i < S; ++i) win[i] = taps[std::size_t(c) * S + i];
      for (int t = 0; t < T; ++t) win[S + t] = x.row(t)[c];
      for (int i = 0; i < S; ++i) next[std::size_t(c) * S + i] = win[T + i];
    }
    const Dev<float> sxd(k_, sx);
    k_.ssm_conv(sxd.p(), wd.p(), y.p(), 1, T, C, K, true, bug_);
  }
  k_.synchronize();
  Mat st(S, C);
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < C; ++c) st.row(r)[c] = next[std::size_t(c) * S + r];
  out["conv"] = to_f16(to_mat(y.get(), T, C));
  out["conv_state"] = to_f16(st);
}

// The recurrence of one layer; the state in the kernels' [nv, dk, dv] layout.
void GdnCandidate::gdn_step(int step, const TensorMap& inputs, TensorMap& out) const {
  const int nk = cfg_.gdn_k_heads, nv = cfg_.gdn_v_heads, dk = cfg_.gdn_k_dim, dv = cfg_.gdn_v_dim;
  const Mat q = to_mat(in(inputs, "q_l2")), k = to_mat(in(inputs, "k_l2")), g = to_mat(in(inputs, "g")),
            beta = to_mat(in(inputs, "beta"));
  const Mat v = columns(to_mat(in(inputs, "conv")), 2 * cfg_.gdn_key_dim(), cfg_.gdn_value_dim());
  const int T = int(q.rows);
  const std::size_t slot = std::size_t(nv) * dk * dv;
  const bool key_major = cfg_.gdn_state_layout == GdnStateLayout::key_major;
  std::vector<float> s0 = zeros(slot);
  if (const Tensor& prev = in(inputs, "prev:gdn_state"); !prev.empty())
    for (int h = 0; h < nv; ++h)
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j)
          s0[(std::size_t(h) * dk + i) * dv + j] = float(
              prev.at(key_major ? (std::int64_t(h) * dk + i) * dv + j : (std::int64_t(h) * dv + j) * dk + i));
  const Dev<float> qd(k_, q.v), kd(k_, k.v), vd(k_, v.v), gd(k_, g.v), bd(k_, beta.v),
      o(k_, std::size_t(T) * nv * dv);
  std::vector<float> s1;
  const bool decode = T == 1 && step > 0;
  if (decode && cfg_.gdn_fused.has(Op::GdnInplaceIds)) {
    // Op B over a 2-slot cache, destination slot 0; odd steps read the prior state from slot 1.
    const int src = step % 2;
    const Dev<float> cache(k_, zeros(2 * slot)), scratch(k_, slot);
    cache.put(s0, std::size_t(src) * slot);
    const Dev<std::int32_t> ids(k_, std::vector<std::int32_t>{src});
    k_.gdn_inplace_ids(qd.p(), kd.p(), vd.p(), gd.p(), bd.p(), cache.p(), ids.p(), 0, scratch.p(), o.p(), 1,
                       nk, nv, dk, dv, bug_);
    s1 = cache.get(0, slot);
  } else if (decode && cfg_.gdn_fused.has(Op::GdnInplace)) {
    const Dev<float> cache(k_, s0);  // op A: the state slot read and rewritten in place
    k_.gdn_inplace(qd.p(), kd.p(), vd.p(), gd.p(), bd.p(), cache.p(), o.p(), 1, nk, nv, dk, dv, bug_);
    s1 = cache.get();
  } else {
    const Dev<float> si(k_, s0), so(k_, slot);
    k_.gdn(qd.p(), kd.p(), vd.p(), gd.p(), bd.p(), si.p(), so.p(), o.p(), 1, T, nk, nv, dk, dv, bug_);
    s1 = so.get();
  }
  k_.synchronize();
  Mat st(key_major ? std::int64_t(nv) * dk : std::int64_t(nv) * dv, key_major ? dv : dk);
  for (int h = 0; h < nv; ++h)
    for (int i = 0; i < dk; ++i)
      for (int j = 0; j < dv; ++j)
        st.v[key_major ? (std::size_t(h) * dk + i) * dv + j : (std::size_t(h) * dv + j) * dk + i] =
            s1[(std::size_t(h) * dk + i) * dv + j];
  out["gdn_out"] = to_f16(to_mat(o.get(), T, std::int64_t(nv) * dv));
  out["gdn_state"] = to_f16(st);
}

void GdnCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                       TensorMap& outputs) {
  const ModelConfig& c = cfg_;
  const int l = ctx.layer, d = c.head_dim;
  const float eps = float(c.norm_eps);
  const std::string& s = step.name;
  auto x = [&](std::string_view n) { return to_mat(in(inputs, n)); };
  auto bias = [&](std::string_view role) -> std::span<const float> {
    const Mat* b = w_opt(l, role);
    return b == nullptr ? std::span<const float>{} : std::span<const float>(b->v);
  };
  auto put = [&](std::string_view n, const Mat& m) { outputs[std::string(n)] = to_f16(m); };

  if (s == "embedding") {
    const Tensor& tok = in(inputs, "tokens");
    const Mat& E = w(kModelLayer, "token_embd.weight");
    Mat e(tok.numel(), E.cols);
    for (std::int64_t t = 0; t < tok.numel(); ++t) {
      const auto id = std::int64_t(tok.at(t));
      if (id < 0 || id >= E.rows)
        throw std::out_of_range(fmt::format("token id {} outside the vocabulary", id));
      std::copy(E.row(id), E.row(id) + E.cols, e.row(t));
    }
    put("embed", e);
  } else if (s == "final_norm") {
    put(s, cpu::rmsnorm(x("x"), norm_w(kModelLayer, "output_norm.weight"), eps, c.hidden));
  } else if (s == "lm_head") {
    const Mat* lm = w_opt(kModelLayer, "output.weight");
    put("logits",
        cpu::linear(x("final_norm"), lm != nullptr ? *lm : w(kModelLayer, "token_embd.weight"), {}));
  } else if (s == "attn_norm" || s == "ffn_norm") {
    put(s, cpu::rmsnorm(x(s == "attn_norm" ? "x" : "residual_1"), norm_w(l, fmt::format("{}.weight", s)), eps,
                        c.hidden));
  } else if (s == "gdn_in_proj") {
    const Mat a = x("attn_norm");
    put("qkv_mixed", cpu::linear(a, w(l, "attn_qkv.weight"), {}));
    put("z_gate", cpu::linear(a, w(l, "attn_gate.weight"), {}));
    Mat b = cpu::linear(a, w(l, "ssm_beta.weight"), {}), g = cpu::linear(a, w(l, "ssm_alpha.weight"), {});
    const Mat &A = w(l, "ssm_a"), &dt = w(l, "ssm_dt.bias");
    for (std::int64_t t = 0; t < b.rows; ++t)
      for (std::int64_t h = 0; h < b.cols; ++h) {
        b.row(t)[h] = sigmoidf(b.row(t)[h]);
        g.row(t)[h] = A.v[std::size_t(h)] * softplusf(g.row(t)[h] + dt.v[std::size_t(h)]);
      }
    put("beta", b);
    put("g", g);
  } else if (s == "conv") {
    conv_step(l, ctx.step, in(inputs, "qkv_mixed"), in(inputs, "prev:conv_state"), outputs);
  } else if (s == "l2norm") {
    const Mat cv = x("conv");
    const int dk = c.gdn_k_dim, kd = c.gdn_key_dim();
    for (int which = 0; which < 2; ++which) {
      Mat y = columns(cv, std::int64_t(which) * kd, kd);
      const float scale = which == 0 ? 1.0f / std::sqrt(float(dk)) : 1.0f;
      for (std::int64_t r = 0; r < y.rows; ++r)
        for (int h = 0; h < c.gdn_k_heads; ++h) {
          float* e = y.row(r) + std::int64_t(h) * dk;
          float ss = 0;
          for (int i = 0; i < dk; ++i) ss += e[i] * e[i];
          const float inv = 1.0f / std::sqrt(ss + 1e-6f);
          for (int i = 0; i < dk; ++i) e[i] = e[i] * inv * scale;
        }
      put(which == 0 ? "q_l2" : "k_l2", y);
    }
  } else if (s == "gdn") {
    gdn_step(ctx.step, inputs, outputs);
  } else if (s == "gated_norm") {
    Mat o = x("gdn_out");
    const Mat z = x("z_gate"), &nw = w(l, "ssm_norm.weight");
    const int dv = c.gdn_v_dim;
    for (std::int64_t r = 0; r < o.rows; ++r)
      for (std::int64_t h = 0; h < o.cols / dv; ++h) {
        float* e = o.row(r) + h * dv;
        const float* ze = z.row(r) + h * dv;
        float ss = 0;
        for (int i = 0; i < dv; ++i) ss += e[i] * e[i];
        const float inv = 1.0f / std::sqrt(ss / float(dv) + eps);
        for (int i = 0; i < dv; ++i) e[i] = nw.v[std::size_t(i)] * (e[i] * inv) * siluf(ze[i]);
      }
    put("gated_norm", o);
  } else if (s == "out_proj_add" || s == "o_proj_add") {
    const bool gdn = s == "out_proj_add";
    const Mat y =
        cpu::linear(x(gdn ? "gated_norm" : "attn_gated"), w(l, gdn ? "ssm_out.weight" : "attn_output.weight"),
                    gdn ? std::span<const float>{} : bias("attn_output.bias"));
    put(gdn ? "out_proj" : "attn_out", y);
    put("residual_1", cpu::add(x("x"), y));
  } else if (s == "q_proj") {
    const Mat a = x("attn_norm");
    const Mat qg = cpu::linear(a, w(l, "attn_q.weight"), bias("attn_q.bias"));
    Mat q(qg.rows, qg.cols / 2), gate(qg.rows, qg.cols / 2);
    for (std::int64_t t = 0; t < qg.rows; ++t)
      for (std::int64_t h = 0; h < q.cols / d; ++h)
        for (int i = 0; i < d; ++i) {
          q.row(t)[h * d + i] = qg.row(t)[h * 2 * d + i];
          gate.row(t)[h * d + i] = qg.row(t)[h * 2 * d + d + i];
        }
    put("q", q);
    put("attn_gate", gate);
    put("k", cpu::linear(a, w(l, "attn_k.weight"), bias("attn_k.bias")));
    put("v", cpu::linear(a, w(l, "attn_v.weight"), bias("attn_v.bias")));
  } else if (s == "qk_norm") {
    put("q_norm", cpu::rmsnorm(x("q"), norm_w(l, "attn_q_norm.weight"), eps, d));
    put("k_norm", cpu::rmsnorm(x("k"), norm_w(l, "attn_k_norm.weight"), eps, d));
  } else if (s == "rope") {
    put("q_rope", cpu::rope(x("q_norm"), d, c.rotary_dim(), ctx.pos0, float(c.rope_theta), c.rope_mode,
                            c.rope_freq_factors));
    put("k_rope", cpu::rope(x("k_norm"), d, c.rotary_dim(), ctx.pos0, float(c.rope_theta), c.rope_mode,
                            c.rope_freq_factors));
  } else if (s == "attention") {
    put("attn",
        cpu::attention(x("q_rope"), x("cache:k_rope"), x("cache:v"), c.n_heads, c.n_kv_heads, d, ctx.pos0));
  } else if (s == "attn_gate_mul") {
    Mat a = x("attn");
    const Mat g = x("attn_gate");
    for (std::size_t i = 0; i < a.v.size(); ++i) a.v[i] *= sigmoidf(g.v[i]);
    put("attn_gated", a);
  } else if (s == "gate_up") {
    const Mat f = x("ffn_norm");
    put("gate", cpu::linear(f, w(l, "ffn_gate.weight"), bias("ffn_gate.bias")));
    put("up", cpu::linear(f, w(l, "ffn_up.weight"), bias("ffn_up.bias")));
  } else if (s == "swiglu") {
    put("ffn_act", cpu::silu_mul(x("gate"), x("up")));
  } else if (s == "down_add") {
    const Mat y = cpu::linear(x("ffn_act"), w(l, "ffn_down.weight"), bias("ffn_down.bias"));
    put("down", y);
    put("residual_2", cpu::add(x("residual_1"), y));
  } else {
    throw std::logic_error(fmt::format("{}: unknown step '{}'", name_, s));
  }
}

}  // namespace ds::gpu
