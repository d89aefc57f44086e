#include "gpu_candidate.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "checked_kernels.h"
#include "dev_buf.h"
#include "gdn_steps.h"
#include "launch_sinks.h"
#include "simt/simt.h"
#include "stage_catalog.h"

namespace ds::gpu {

namespace {

const Tensor& in(const TensorMap& inputs, std::string_view name) { return step_input(inputs, name); }

std::size_t wsize(dsk::WType wt) { return wt == dsk::WType::f32 ? 4 : 2; }

}  // namespace

std::optional<dsk::WType> kernel_wtype(std::string_view ggml_name) {
  static constexpr std::pair<std::string_view, dsk::WType> kTypes[] = {
      {"Q8_0", dsk::WType::q8_0}, {"Q4_0", dsk::WType::q4_0}, {"Q4_1", dsk::WType::q4_1},
      {"Q5_0", dsk::WType::q5_0}, {"Q5_1", dsk::WType::q5_1}, {"IQ4_NL", dsk::WType::iq4_nl},
      {"Q2_K", dsk::WType::q2_k}, {"Q3_K", dsk::WType::q3_k}, {"Q4_K", dsk::WType::q4_k},
      {"Q5_K", dsk::WType::q5_k}, {"Q6_K", dsk::WType::q6_k}, {"IQ4_XS", dsk::WType::iq4_xs}};
  for (const auto& [name, wt] : kTypes)
    if (name == ggml_name) return wt;
  return std::nullopt;
}

GpuCandidate::GpuCandidate(const dsk::KernelTable& table, std::string name, std::string description,
                           bool fused_gdn_ops)
    : made_with_(&table),
      table_(table),
      name_(std::move(name)),
      description_(std::move(description)),
      fused_gdn_ops_(fused_gdn_ops) {}

namespace {
// What a candidate whose kernels sit in a module holds until load() opens it: no kernel at all
// (the constructor sets the backend they will have).
const dsk::KernelTable& not_opened_yet() {
  static const dsk::KernelTable none = [] {
    dsk::KernelTable t{};
    t.backend = "simt";
    t.device_error = [] { return std::string(); };
    return t;
  }();
  return none;
}
}  // namespace

GpuCandidate::GpuCandidate(OpenKernels open, const char* backend, std::string name, std::string description)
    : GpuCandidate(not_opened_yet(), std::move(name), std::move(description)) {
  open_ = std::move(open);
  table_.backend = backend;
}

GpuCandidate::~GpuCandidate() { free_all(); }

void GpuCandidate::free_all() {
  for (auto& [n, d] : dev_)
    if (!d.borrowed) k_.release(d.p);
  dev_.clear();
}

OpSet GpuCandidate::capabilities() const {
  // Exactly what kernels/*.cu implement and plan() routes, for every family the reference has.
  OpSet ops{Op::RoPE, Op::RoPENeox, Op::RoPEPartial, Op::RoPEFreqFactors, Op::GQA, Op::MHA, Op::CausalMask,
            Op::SwiGLU, Op::GeluMlp, Op::RMSNorm, Op::RMSNormPlusOne, Op::LayerNorm, Op::BiasAdd, Op::QkNorm,
            Op::AbsolutePos, Op::AttnOutputGate, Op::GatedDeltaNet, Op::SsmConv,
            // kernels/moe_route.cu's two rules and renormalisation, kernels/moe_experts.cu's experts
            // (the shared expert's MLP too) and kernels/moe_shexp.cu's gate; the top-k and expert
            // count it can serve are moe_limits().
            Op::MoeSoftmaxTopK, Op::MoeTopKSoftmax, Op::MoeNormTopK, Op::MoeExperts, Op::MoeSharedExpert};
  if (fused_gdn_ops_)
    for (Op op : {Op::GdnInplace, Op::GdnInplaceIds, Op::SsmConvUpdate, Op::SsmConvUpdateIds}) ops.add(op);
  return ops;
}

std::vector<KernelStep> GpuCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  const std::vector<KernelStep> mlp = {{"ffn_norm", {"residual_1"}, {"ffn_norm"}},
                                       {"gate_proj", {"ffn_norm"}, {"gate"}},
                                       {"up_proj", {"ffn_norm"}, {"up"}},
                                       {"swiglu", {"gate", "up"}, {"ffn_act"}},
                                       {"down_add", {"ffn_act", "residual_1"}, {"down", "residual_2"}}};
  std::vector<KernelStep> p;
  switch (kind) {
    case BlockKind::embed: return {{"embedding", {"tokens"}, {"embed"}}};
    case BlockKind::head:
      return {{cfg.family == Family::gpt2 ? "ln_f" : "final_norm", {"x"}, {"final_norm"}},
              {"lm_head", {"final_norm"}, {"logits"}}};
    case BlockKind::gpt2:
      return {{"ln_1", {"x"}, {"ln_1"}},
              {"c_attn", {"ln_1"}, {"qkv"}},
              {"attention_qkv", {"qkv", "cache:qkv"}, {"attn"}},
              {"o_proj_add", {"attn", "x"}, {"attn_out", "residual_1"}},
              {"ln_2", {"residual_1"}, {"ln_2"}},
              {"c_fc", {"ln_2"}, {"fc"}},
              {"gelu", {"fc"}, {"gelu"}},
              {"down_add", {"gelu", "residual_1"}, {"proj", "residual_2"}}};
    case BlockKind::decoder:
    case BlockKind::gated_attn: {
      // Gated attention: q_proj also yields the gate, which scales the attention output.
      const bool gated = kind == BlockKind::gated_attn;
      p = {{"attn_norm", {"x"}, {"attn_norm"}},
           gated ? KernelStep{"q_proj", {"attn_norm"}, {"q", "attn_gate", "k", "v"}}
                 : KernelStep{"fused_qkv", {"attn_norm"}, {"q", "k", "v"}}};
      if (cfg.qk_norm) p.push_back({"qk_norm", {"q", "k"}, {"q_norm", "k_norm"}});
      if (cfg.qk_norm)
        p.push_back({"rope", {"q_norm", "k_norm"}, {"q_rope", "k_rope"}});
      else
        p.push_back({"rope", {"q", "k"}, {"q_rope", "k_rope"}});
      p.push_back({"attention", {"q_rope", "cache:k_rope", "cache:v"}, {"attn"}});
      if (gated) p.push_back({"attn_gate_mul", {"attn", "attn_gate"}, {"attn_gated"}});
      p.push_back({"o_proj_add", {gated ? "attn_gated" : "attn", "x"}, {"attn_out", "residual_1"}});
      break;
    }
    case BlockKind::gdn:
      p = gdn_steps_to_gated_norm();
      p.push_back({"out_proj_add", {"gated_norm", "x"}, {"out_proj", "residual_1"}});  // fused
      break;
    default: return {};  // refused by the capability gate first
  }
  if (cfg.moe()) {
    const std::vector<KernelStep> moe = moe_steps(cfg.shared_expert());
    p.insert(p.end(), moe.begin(), moe.end());
  } else {
    p.insert(p.end(), mlp.begin(), mlp.end());
  }
  return p;
}

void GpuCandidate::upload_matrix(const std::string& key, const std::vector<const Tensor*>& parts,
                                 bool as_f32) {
  // Kept in the stored dtype when every part shares f32 / f16 / bf16; otherwise as f32.
  const DType dt = parts.front()->dtype();
  bool same = !as_f32 && (dt == DType::f32 || dt == DType::f16 || dt == DType::bf16);
  for (const Tensor* t : parts) same = same && t->dtype() == dt;
  const dsk::WType wt = !same               ? dsk::WType::f32
                        : dt == DType::f16  ? dsk::WType::f16
                        : dt == DType::bf16 ? dsk::WType::bf16
                                            : dsk::WType::f32;
  if (same && parts.size() == 1 && reads_weights_in_place()) {
    dev_[key] = {const_cast<std::byte*>(parts.front()->raw()), wt, true};
    return;
  }
  std::size_t n = 0;
  for (const Tensor* t : parts) n += std::size_t(t->numel());
  copied_matrix_elements_ += n;
  void* p = k_.alloc(n * wsize(wt));
  std::size_t at = 0;
  for (const Tensor* t : parts) {
    const Tensor conv = same ? Tensor{} : t->to(DType::f32);
    const Tensor& src = same ? *t : conv;
    k_.to_device(static_cast<char*>(p) + at, src.raw(), src.nbytes());
    at += src.nbytes();
  }
  dev_[key] = {p, wt};
}

GpuCandidate::Blocks GpuCandidate::readable_quantized(const WeightStore& weights,
                                                      std::string_view name) const {
  const QuantMatrix* q = weights.find_quantized(name);
  const std::optional<dsk::WType> wt = q ? kernel_wtype(q->type) : std::nullopt;
  if (!wt) return {};
  if (q->row_bytes != dsk::weight_row_bytes(*wt, int(q->cols())))
    throw std::logic_error(
        fmt::format("{}: {} rows of {} bytes, not whole {} blocks", name_, name, q->row_bytes, q->type));
  return {q, *wt};
}

void GpuCandidate::upload_weight(const std::string& key, const WeightStore& weights, std::string_view name) {
  const auto [q, wt] = readable_quantized(weights, name);
  if (q == nullptr) return upload_matrix(key, {&weights.get(name)});
  // Its file's blocks, decoded by the kernels as they read them: in place on SIMT (the GGUF's
  // mapping lives as long as the model), one copy of the bytes on a GPU.
  if (reads_weights_in_place()) {
    dev_[key] = {const_cast<std::byte*>(q->data), wt, true};
    return;
  }
  void* p = k_.alloc(q->nbytes());
  k_.to_device(p, q->data, q->nbytes());
  dev_[key] = {p, wt};
}

void GpuCandidate::upload_packed(const std::string& key, const WeightStore& weights,
                                 const std::vector<std::string_view>& names) {
  // Quantized parts of one type are packed as their bytes (rows are whole blocks); otherwise as
  // the decoded tensors (upload_matrix's rules).
  std::vector<const QuantMatrix*> q;
  dsk::WType wt{};
  for (std::string_view n : names)
    if (const Blocks b = readable_quantized(weights, n); b.q && (q.empty() || b.wt == wt)) {
      q.push_back(b.q);
      wt = b.wt;
    }
  if (q.size() == names.size()) {
    std::size_t bytes = 0;
    for (const QuantMatrix* m : q) bytes += m->nbytes();
    char* p = static_cast<char*>(k_.alloc(bytes));
    std::size_t at = 0;
    for (const QuantMatrix* m : q) {
      k_.to_device(p + at, m->data, m->nbytes());
      at += m->nbytes();
      copied_matrix_elements_ += std::uint64_t(numel(m->shape));
    }
    dev_[key] = {p, wt};
    return;
  }
  std::vector<const Tensor*> parts;
  for (std::string_view n : names) parts.push_back(&weights.get(n));
  upload_matrix(key, parts);
}

void GpuCandidate::qkv_projection(int l, const void* x, void* q, void* k, void* v, int T, int q_rows,
                                  int kv_rows, int cols) const {
  const dsk::WType wt = dev_.at(layer_weight(l, "attn_q.weight")).wt;
  const bool one_type = dev_.at(layer_weight(l, "attn_k.weight")).wt == wt &&
                        dev_.at(layer_weight(l, "attn_v.weight")).wt == wt;
  if (one_type) {
    k_.fused_qkv(mat(l, "attn_q.weight"), mat(l, "attn_k.weight"), mat(l, "attn_v.weight"), wt,
                 vec(l, "attn_q.bias"), vec(l, "attn_k.bias"), vec(l, "attn_v.bias"), x, q, k, v, T, q_rows,
                 kv_rows, cols);
    return;
  }
  // Stored in different types (a Q4_K_M file keeps some layers' v in Q6_K): one GEMV each, since
  // a fused_qkv launch reads its three matrices with one type.
  const std::pair<std::string_view, void*> parts[] = {{"attn_q", q}, {"attn_k", k}, {"attn_v", v}};
  for (const auto& [role, out] : parts) {
    const std::string w = fmt::format("{}.weight", role);
    k_.gemv(mat(l, w), dev_.at(layer_weight(l, w)).wt, x, vec(l, fmt::format("{}.bias", role)), out, nullptr,
            T, role == "attn_q" ? q_rows : kv_rows, cols);
  }
}

void GpuCandidate::upload_vector(const std::string& key, const Tensor& t) {
  const Tensor f = t.to(DType::f32);
  void* p = k_.alloc(f.nbytes());
  k_.to_device(p, f.raw(), f.nbytes());
  dev_[key] = {p, dsk::WType::f32};
}

std::string GpuCandidate::unavailable() const {
  if (open_) {
    std::string why;
    const dsk::KernelTable* t = open_(why);
    return t == nullptr ? why : t->device_error();
  }
  return k_.device_error();
}

void GpuCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  free_all();  // through the table that allocated it, before choosing again
  choose_kernels();
  if (const std::string why = k_.device_error(); !why.empty()) throw std::runtime_error(why);
  launch_sinks::start(k_.backend);
  cfg_ = cfg;
  n_positions_ = 0;
  copied_matrix_elements_ = 0;
  upload_weight("token_embd.weight", weights, "token_embd.weight");
  if (weights.shape_of("output.weight")) upload_weight("output.weight", weights, "output.weight");
  // Learned positions go up as f32 whatever their stored dtype: the embedding kernel adds
  // them in f32, and the table is small next to the token embedding.
  if (const QuantMatrix* pos = weights.find_quantized("position_embd.weight")) {
    upload_vector("position_embd.weight", pos->dequantized());  // not kept decoded in the store
    n_positions_ = int(pos->rows());
  } else if (const Tensor* pos = weights.find("position_embd.weight")) {
    upload_vector("position_embd.weight", *pos);
    n_positions_ = int(pos->dim(0));
  }
  // RoPE scaling's per-pair frequency factors: a config value, not a weight (GGUF stores it as one).
  if (!cfg.rope_freq_factors.empty())
    upload_vector("rope_freqs", Tensor::from_f64({std::int64_t(cfg.rope_freq_factors.size())},
                                                 cfg.rope_freq_factors, DType::f32));
  for (std::string_view v : {"output_norm.weight", "output_norm.bias"})
    if (const Tensor* t = weights.find(v)) upload_vector(std::string(v), *t);
  for (int l = 0; l < cfg.n_layers; ++l) {
    switch (cfg.block_kind(l)) {
      case BlockKind::gpt2: load_gpt2_layer(l, weights); break;
      case BlockKind::gdn: load_gdn_layer(l, weights); break;
      default: load_decoder_layer(l, weights); break;  // decoder and gated_attn
    }
  }
}

void GpuCandidate::choose_kernels() {
  if (open_) {
    std::string why;
    made_with_ = open_(why);
    if (made_with_ == nullptr) {
      made_with_ = &not_opened_yet();
      throw std::runtime_error(why);
    }
  }
  table_ = *made_with_;
  checked_ = false;
  // Mutants keep their plain tables and the page-fault checker.
  if (made_with_ != &dsk_simt::table() || !serves_checked_kernels(launch_sinks::configured())) return;
  const simt::Config c = simt::config();  // as launch_sinks::configure left it for this run
  std::string why;
  if (const dsk::KernelTable* checked = checked_kernels(why)) {
    table_ = *checked;
    checked_ = true;
    return;
  }
  static const bool said =
      (c.racecheck ? fmt::print(stderr,
                                "driftscope: --simt-racecheck runs {} on the page-fault "
                                "hazard checker (no file:line for global memory or static "
                                "shared memory): {}\n",
                                name_, why)
                   : fmt::print(stderr,
                                "driftscope: --race-check reruns {} without interleaving at "
                                "memory operations (its plain kernels): {}\n",
                                name_, why),
       true);
  (void)said;
}

std::vector<std::string_view> GpuCandidate::packed_roles(BlockKind kind) {
  // Decoder and gated-attention layers launch per stored matrix (fused_qkv takes q, k and v
  // apart; gate and up are two GEMVs), and GPT-2's c_attn is stored packed: nothing to copy.
  if (kind == BlockKind::gdn)
    return {"attn_qkv.weight", "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight"};
  return {};
}

void GpuCandidate::load_decoder_layer(int l, const WeightStore& weights) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  // q, k and v as stored (a gated-attention layer's q is q_proj, [q | gate] per head, 2 H d rows):
  // fused_qkv takes the three apart, so none is packed into a copy.
  for (std::string_view m : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
    upload_weight(n(m), weights, n(m));
  for (std::string_view v : {"attn_norm.weight", "attn_q_norm.weight", "attn_k_norm.weight", "attn_q.bias",
                             "attn_k.bias", "attn_v.bias", "attn_output.bias"})
    if (const Tensor* t = weights.find_layer(l, v)) upload_vector(n(v), *t);
  if (cfg_.moe())
    load_moe(l, weights);
  else
    load_mlp(l, weights);
}

void GpuCandidate::load_mlp(int l, const WeightStore& weights) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  // gate and up as stored, one GEMV each: a packed [gate | up] would be a copy of both.
  for (std::string_view m : {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"})
    upload_weight(n(m), weights, n(m));
  for (std::string_view v : {"ffn_norm.weight", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"})
    if (const Tensor* t = weights.find_layer(l, v)) upload_vector(n(v), *t);
}

void GpuCandidate::load_gpt2_layer(int l, const WeightStore& weights) {
  // The store holds every projection [out, in]: the safetensors loader transposes GPT-2's
  // Conv1D [in, out] weights, and llama.cpp's converter did the same before writing a GGUF.
  // So c_attn is one [3 D, D] matrix whose rows are q, then k, then v.
  for (std::string_view m : {"attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight"})
    upload_weight(layer_weight(l, m), weights, layer_weight(l, m));
  for (std::string_view v : {"attn_norm.weight", "attn_norm.bias", "attn_qkv.bias", "attn_output.bias",
                             "ffn_norm.weight", "ffn_norm.bias", "ffn_up.bias", "ffn_down.bias"})
    upload_vector(layer_weight(l, v), weights.layer(l, v));
}

const void* GpuCandidate::mat(int layer, std::string_view role) const {
  const std::string n = layer == kModelLayer ? std::string(role) : layer_weight(layer, role);
  auto it = dev_.find(n);
  if (it == dev_.end()) throw std::out_of_range(fmt::format("{}: weight '{}' not loaded", name_, n));
  return it->second.p;
}

const float* GpuCandidate::vec(int layer, std::string_view role) const {
  auto it = dev_.find(layer == kModelLayer ? std::string(role) : layer_weight(layer, role));
  return it == dev_.end() ? nullptr : static_cast<const float*>(it->second.p);
}

const float* GpuCandidate::need_vec(int layer, std::string_view role) const {
  static_cast<void>(mat(layer, role));  // throws naming the weight when it is absent
  return vec(layer, role);
}

std::vector<SeqSpan> GpuCandidate::seq_spans(const StepContext& ctx) {
  if (!ctx.seqs.empty()) return ctx.seqs;
  SeqSpan one;
  one.n_tokens = ctx.n_tokens;
  one.pos0 = ctx.pos0;
  return {one};
}

void GpuCandidate::check_cache_rows(const StepContext& ctx, int rows) const {
  int want = 0;
  for (const SeqSpan& q : seq_spans(ctx)) want += q.pos0 + q.n_tokens;
  if (rows != want)
    throw std::logic_error(fmt::format("{}: KV cache holds {} rows, expected {}", name_, rows, want));
}

void GpuCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                       TensorMap& outputs) {
  const ModelConfig& c = cfg_;
  const int l = ctx.layer, T = ctx.n_tokens;
  const int D = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, hd = c.head_dim;
  const float eps = float(c.norm_eps);
  const std::string& s = step.name;
  auto up = [&](std::string_view name) { return DevBuf(k_, in(inputs, name)); };
  auto buf = [&](std::int64_t elems, std::size_t elem_size = 2) {
    return DevBuf(k_, std::size_t(elems) * elem_size);
  };
  auto wt_of = [&](int layer, std::string_view role) {
    return dev_.at(layer == kModelLayer ? std::string(role) : layer_weight(layer, role)).wt;
  };

  if (run_hybrid(step, ctx, inputs, outputs)) {
    // a Qwen3-Next step (gpu_hybrid.cpp)
  } else if (run_moe(step, ctx, inputs, outputs)) {
    // a mixture-of-experts step (gpu_moe.cpp)
  } else if (s == "embedding") {
    const Tensor& tok = in(inputs, "tokens");
    for (std::int64_t t = 0; t < tok.numel(); ++t)
      if (tok.at(t) < 0 || tok.at(t) >= c.vocab)
        throw std::out_of_range(fmt::format("token id {} outside the vocabulary of {}", tok.at(t), c.vocab));
    const float* pos = vec(kModelLayer, "position_embd.weight");
    DevBuf ids(k_, tok), out = buf(std::int64_t(T) * D);
    // One launch per sequence: its tokens sit at its own positions (GPT-2's learned ones).
    for (const SeqSpan& q : seq_spans(ctx)) {
      if (pos != nullptr && q.pos0 + q.n_tokens > n_positions_)
        throw std::out_of_range(fmt::format("position {} beyond the {} learned positions",
                                            q.pos0 + q.n_tokens - 1, n_positions_));
      k_.embedding(mat(kModelLayer, "token_embd.weight"), wt_of(kModelLayer, "token_embd.weight"),
                   static_cast<const std::int32_t*>(ids.get()) + q.row0, pos, q.pos0,
                   f16_at(out.get(), std::int64_t(q.row0) * D), q.n_tokens, D);
    }
    outputs["embed"] = out.f16(T, D);
  } else if (s == "ln_f" || s == "ln_1" || s == "ln_2") {
    // GPT-2's LayerNorms: ln_f is output_norm, ln_1 attn_norm, ln_2 ffn_norm (GGUF names).
    const int layer = s == "ln_f" ? kModelLayer : l;
    const std::string_view role = s == "ln_f" ? "output_norm" : s == "ln_1" ? "attn_norm" : "ffn_norm";
    DevBuf x = up(step.inputs[0]), y = buf(std::int64_t(T) * D);
    k_.layernorm(x.get(), need_vec(layer, fmt::format("{}.weight", role)),
                 need_vec(layer, fmt::format("{}.bias", role)), y.get(), T, D, eps);
    outputs[step.outputs[0]] = y.f16(T, D);
  } else if (s == "final_norm" || s == "attn_norm" || s == "ffn_norm") {
    const std::string_view src = s == "ffn_norm" ? "residual_1" : "x";
    const float* w =
        s == "final_norm" ? vec(kModelLayer, "output_norm.weight") : vec(l, fmt::format("{}.weight", s));
    DevBuf x = up(src), y = buf(std::int64_t(T) * D);
    k_.rmsnorm(x.get(), w, norm_offset(), y.get(), T, D, eps);
    outputs[s] = y.f16(T, D);
  } else if (s == "lm_head") {
    const std::string_view role = dev_.count("output.weight") ? "output.weight" : "token_embd.weight";
    DevBuf x = up("final_norm"), y = buf(std::int64_t(T) * c.vocab);
    k_.gemv(mat(kModelLayer, role), wt_of(kModelLayer, role), x.get(), nullptr, y.get(), nullptr, T, c.vocab,
            D);
    outputs["logits"] = y.f16(T, c.vocab);
  } else if (s == "fused_qkv") {
    DevBuf x = up("attn_norm"), q = buf(std::int64_t(T) * Q), k = buf(std::int64_t(T) * KV),
           v = buf(std::int64_t(T) * KV);
    qkv_projection(l, x.get(), q.get(), k.get(), v.get(), T, Q, KV, D);
    outputs["q"] = q.f16(T, Q);
    outputs["k"] = k.f16(T, KV);
    outputs["v"] = v.f16(T, KV);
  } else if (s == "qk_norm") {
    DevBuf q = up("q"), k = up("k"), qn = buf(std::int64_t(T) * Q), kn = buf(std::int64_t(T) * KV);
    k_.qk_norm(q.get(), k.get(), need_vec(l, "attn_q_norm.weight"), need_vec(l, "attn_k_norm.weight"),
               norm_offset(), qn.get(), kn.get(), T, c.n_heads, c.n_kv_heads, hd, eps);
    outputs["q_norm"] = qn.f16(T, Q);
    outputs["k_norm"] = kn.f16(T, KV);
  } else if (s == "rope") {
    DevBuf q = up(step.inputs[0]), k = up(step.inputs[1]);
    for (const SeqSpan& sq : seq_spans(ctx))  // each sequence's rows at its own positions
      k_.rope(f16_at(q.get(), std::int64_t(sq.row0) * Q), f16_at(k.get(), std::int64_t(sq.row0) * KV),
              sq.n_tokens, c.n_heads, c.n_kv_heads, hd, c.rotary_dim(), sq.pos0, float(c.rope_theta),
              vec(kModelLayer, "rope_freqs"), c.rope_mode == RopeMode::neox);
    outputs["q_rope"] = q.f16(T, Q);
    outputs["k_rope"] = k.f16(T, KV);
  } else if (s == "attention") {
    const Tensor& kc = in(inputs, "cache:k_rope");
    check_cache_rows(ctx, int(kc.dim(0)));
    DevBuf q = up("q_rope"), kd = up("cache:k_rope"), vd = up("cache:v"), o = buf(std::int64_t(T) * Q);
    for (const SeqSpan& sq : seq_spans(ctx)) {  // each sequence attends to its own cache rows only
      const std::int64_t kv_at = std::int64_t(sq.cache_row0) * KV;
      k_.attention(f16_at(q.get(), std::int64_t(sq.row0) * Q), f16_at(kd.get(), kv_at),
                   f16_at(vd.get(), kv_at), f16_at(o.get(), std::int64_t(sq.row0) * Q), sq.n_tokens,
                   sq.pos0 + sq.n_tokens, sq.pos0, c.n_heads, c.n_kv_heads, hd, Q, KV);
    }
    outputs["attn"] = o.f16(T, Q);
  } else if (s == "attention_qkv") {
    // GPT-2: q, k and v are column ranges of the c_attn rows [q | k | v], read in place.
    const Tensor& cache = in(inputs, "cache:qkv");
    const int ld = Q + 2 * KV;
    check_cache_rows(ctx, int(cache.dim(0)));
    DevBuf qkv = up("qkv"), cd = up("cache:qkv"), o = buf(std::int64_t(T) * Q);
    for (const SeqSpan& sq : seq_spans(ctx)) {
      const auto* kv = static_cast<const std::uint16_t*>(cd.get()) + std::int64_t(sq.cache_row0) * ld;  // f16
      k_.attention(f16_at(qkv.get(), std::int64_t(sq.row0) * ld), kv + Q, kv + Q + KV,
                   f16_at(o.get(), std::int64_t(sq.row0) * Q), sq.n_tokens, sq.pos0 + sq.n_tokens, sq.pos0,
                   c.n_heads, c.n_kv_heads, hd, ld, ld);
    }
    outputs["attn"] = o.f16(T, Q);
  } else if (s == "o_proj_add" || s == "out_proj_add" || s == "down_add") {
    // Projection + chain-add: inputs (activation, residual), outputs (projection, new residual).
    const std::string_view role = s == "o_proj_add" ? "attn_output"
                                  : s == "down_add" ? "ffn_down"
                                                    : "ssm_out";
    const int cols = s == "o_proj_add" ? Q : s == "down_add" ? F : c.gdn_value_dim();
    DevBuf x = up(step.inputs[0]), resid = up(step.inputs[1]), y = buf(std::int64_t(T) * D);
    k_.gemv(mat(l, fmt::format("{}.weight", role)), wt_of(l, fmt::format("{}.weight", role)), x.get(),
            vec(l, fmt::format("{}.bias", role)), y.get(), resid.get(), T, D, cols);
    outputs[step.outputs[0]] = y.f16(T, D);
    outputs[step.outputs[1]] = resid.f16(T, D);
  } else if (s == "c_attn" || s == "c_fc") {
    // GPT-2's fused c_attn [3 D, D] and c_fc [F, D], bias added in f32 before the cast.
    const bool attn = s == "c_attn";
    const std::string_view role = attn ? "attn_qkv" : "ffn_up";
    const int rows = attn ? Q + 2 * KV : F;
    DevBuf x = up(step.inputs[0]), y = buf(std::int64_t(T) * rows);
    k_.gemv(mat(l, fmt::format("{}.weight", role)), wt_of(l, fmt::format("{}.weight", role)), x.get(),
            need_vec(l, fmt::format("{}.bias", role)), y.get(), nullptr, T, rows, D);
    outputs[step.outputs[0]] = y.f16(T, rows);
  } else if (s == "gelu") {
    DevBuf x = up("fc");
    k_.gelu(x.get(), x.get(), T * F);
    outputs["gelu"] = x.f16(T, F);
  } else if (s == "gate_proj" || s == "up_proj") {
    // gate and up each a GEMV over its stored matrix, bias added in f32 in the epilogue.
    const std::string_view role = s == "gate_proj" ? "ffn_gate" : "ffn_up";
    DevBuf x = up("ffn_norm"), y = buf(std::int64_t(T) * F);
    k_.gemv(mat(l, fmt::format("{}.weight", role)), wt_of(l, fmt::format("{}.weight", role)), x.get(),
            vec(l, fmt::format("{}.bias", role)), y.get(), nullptr, T, F, D);
    outputs[step.outputs[0]] = y.f16(T, F);
  } else if (s == "swiglu") {
    DevBuf g = up("gate"), u = up("up"), act = buf(std::int64_t(T) * F);
    k_.swiglu(g.get(), u.get(), vec(l, "ffn_gate.bias"), vec(l, "ffn_up.bias"), false, act.get(), T, F, F);
    outputs["ffn_act"] = act.f16(T, F);
  } else {
    throw std::logic_error(fmt::format("{}: unknown step '{}'", name_, s));
  }
  k_.synchronize();
}

}  // namespace ds::gpu
