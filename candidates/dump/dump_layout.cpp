#include "dump_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>

#include "tensor_files.h"
#include "weights.h"

namespace ds::dump {

namespace {

// Activations of Q/K in GGUF column order to HF order (`to_hf`) or back (gguf_qk_to_hf).
Tensor permute_heads(const Tensor& rows, int head_dim, bool to_hf) {
  const std::int64_t n = rows.dim(0), w = rows.dim(1);
  const std::size_t es = dtype_size(rows.dtype());
  Tensor out(rows.dtype(), rows.shape());
  for (std::int64_t gguf = 0; gguf < w; ++gguf) {
    const std::int64_t hf = gguf_qk_to_hf(gguf, head_dim);
    const std::int64_t src = to_hf ? gguf : hf, dst = to_hf ? hf : gguf;
    for (std::int64_t r = 0; r < n; ++r)
      std::memcpy(out.raw() + std::size_t(r * w + dst) * es, rows.raw() + std::size_t(r * w + src) * es, es);
  }
  return out;
}

int permute_heads_of(const ModelConfig& cfg, const Source& src) {
  return src.unpermute == "q" ? cfg.n_heads : cfg.n_kv_heads;
}

}  // namespace

std::optional<std::int64_t> stage_width(const ModelConfig& cfg, std::string_view s) {
  const std::int64_t hidden = cfg.hidden, q = cfg.q_dim(), kv = cfg.kv_dim(), ffn = cfg.ffn;
  for (std::string_view h :
       {"embed", "final_norm", "attn_norm", "attn_out", "residual_1", "ffn_norm", "down", "residual_2",
        "ln_1", "ln_2", "proj", "out_proj", "moe_out", "shexp_out", "ffn_out"})
    if (s == h) return hidden;
  for (std::string_view h : {"q", "q_norm", "q_rope", "attn", "attn_gate", "attn_gated"})
    if (s == h) return q;
  for (std::string_view h : {"k", "v", "k_norm", "k_rope"})
    if (s == h) return kv;
  for (std::string_view h : {"gate", "up", "ffn_act", "fc", "gelu"})
    if (s == h) return ffn;
  if (s == "qkv") return q + 2 * kv;
  if (s == "logits") return cfg.vocab;
  if (s == "qkv_mixed" || s == "conv") return cfg.gdn_conv_dim();
  if (s == "z_gate" || s == "gdn_out" || s == "gated_norm") return cfg.gdn_value_dim();
  if (s == "q_l2" || s == "k_l2") return cfg.gdn_key_dim();
  if (s == "beta" || s == "g") return cfg.gdn_v_heads;
  // Mixture of experts (docs/moe.md): the router's logits, the chosen experts and their weights,
  // the shared expert's gate.
  if (s == "router_logits") return cfg.n_experts;
  if (s == "expert_ids" || s == "expert_weights") return cfg.n_experts_used;
  if (s == "shexp_gate") return 1;
  return std::nullopt;
}

std::optional<Shape> state_shape(const ModelConfig& cfg, std::string_view s) {
  if (s == "conv_state") return Shape{cfg.conv_state_rows(), cfg.gdn_conv_dim()};
  if (s == "gdn_state") {
    const std::int64_t nv = cfg.gdn_v_heads, dk = cfg.gdn_k_dim, dv = cfg.gdn_v_dim;
    return cfg.gdn_state_layout == GdnStateLayout::key_major ? Shape{nv * dk, dv} : Shape{nv * dv, dk};
  }
  return std::nullopt;
}

std::int64_t split_part_offset(const ModelConfig& cfg, std::string_view stage, std::int64_t* width) {
  const std::int64_t q = cfg.q_dim(), kv = cfg.kv_dim();
  if (width) *width = stage[0] == 'q' ? q : kv;
  return stage[0] == 'q' ? 0 : stage[0] == 'k' ? q : q + kv;
}

Tensor transpose(const Tensor& t, const std::vector<int>& axes) {
  const Shape in_strides = row_major_strides(t.shape());
  Shape shape, strides;
  for (int a : axes) {
    shape.push_back(t.shape()[std::size_t(a)]);
    strides.push_back(in_strides[std::size_t(a)]);
  }
  return Tensor::from_view(TensorView(t.raw(), t.dtype(), shape, strides), t.dtype());
}

namespace {

// A state stage is one value per step, not token rows: its elements must be the catalog's, in
// its order. `rows: last` keeps its last rows (an engine keeping more conv rows than the catalog:
// HF's K where ggml and the catalog keep K-1).
RowPick pick_state_rows(const Shape& shape, const Shape& stored, const Source& src, const ModelConfig& cfg,
                        std::string_view stage, const std::string& where) {
  const auto st = state_shape(cfg, stage);
  if (!st || !src.split.empty() || !src.unpermute.empty() || src.rows == Rows::positions)
    throw DumpError(fmt::format(
        "{}: stage {} has no per-token rows: use no split, unpermute or rows: positions", where, stage));
  RowPick p;
  p.out = (*st)[0];
  p.width = p.row_width = (*st)[1];
  const std::int64_t n = numel(shape), want = numel(*st);
  if (src.rows == Rows::last) {
    if (p.row_width <= 0 || n % p.row_width != 0 || n / p.row_width < p.out)
      throw DumpError(
          fmt::format("{}: shape {} is not at least {} rows of {} elements (rows: last keeps the last "
                      "{} of {} of {})",
                      where, shape_str(stored), p.out, p.row_width, p.out, stage, cfg.name));
    p.rows = n / p.row_width;
    p.first = p.rows - p.out;
    return p;
  }
  if (n != want) {
    const bool more_rows = p.row_width > 0 && n % p.row_width == 0 && n / p.row_width > p.out;
    throw DumpError(
        fmt::format("{}: shape {} does not hold {} of {}: {} elements as {}{}", where, shape_str(stored),
                    stage, cfg.name, want, shape_str(*st),
                    more_rows ? " (more rows than the catalog keeps: rows: last takes its last ones)" : ""));
  }
  p.rows = p.out;
  return p;
}

}  // namespace

RowPick pick_rows(const Shape& stored, const Source& src, const ModelConfig& cfg, std::string_view stage,
                  int pos0, int n_tokens, const std::string& where) {
  Shape shape = stored;
  if (!src.transpose.empty()) {
    if (src.transpose.size() != stored.size())
      throw DumpError(fmt::format("{}: transpose [{}] does not fit its shape {}", where,
                                  fmt::join(src.transpose, ", "), shape_str(stored)));
    for (std::size_t j = 0; j < shape.size(); ++j) shape[j] = stored[std::size_t(src.transpose[j])];
  }
  RowPick p;
  const auto w = stage_width(cfg, stage);
  const std::int64_t n = numel(shape);
  if (!w) return pick_state_rows(shape, stored, src, cfg, stage, where);
  p.width = p.row_width = *w;
  p.out = n_tokens;
  if (!src.split.empty()) {
    p.part = split_part_offset(cfg, stage);
    p.row_width = cfg.q_dim() + 2 * cfg.kv_dim();
  }
  if (p.row_width <= 0 || n % p.row_width != 0)
    throw DumpError(fmt::format("{}: shape {} is not rows of {} elements ({} of {} has {} per token{})",
                                where, shape_str(stored), p.row_width, stage, cfg.name, *w,
                                src.split.empty() ? "" : ", fused [q|k|v]"));
  p.rows = n / p.row_width;
  const char* need = nullptr;
  if (src.rows == Rows::all && p.rows != n_tokens)
    need = "rows: all wants exactly this step's tokens";
  else if (src.rows == Rows::positions && p.rows < pos0 + n_tokens)
    need = "rows: positions wants every position up to this step's";
  else if (src.rows == Rows::last && p.rows < n_tokens)
    need = "rows: last wants at least this step's tokens";
  if (need)
    throw DumpError(fmt::format(
        "{}: shape {} holds {} token row(s) of {} elements; this step has {} token(s) at "
        "positions {}..{} ({})",
        where, shape_str(stored), p.rows, p.row_width, n_tokens, pos0, pos0 + n_tokens - 1, need));
  if (src.rows == Rows::positions) p.first = pos0;
  if (src.rows == Rows::last) p.first = p.rows - n_tokens;
  if (!src.unpermute.empty()) {
    // Only llama.cpp's converter for LLaMA-family models permutes Q/K rows (for NORMAL RoPE);
    // unpermuting anything else scrambles it into what looks like an engine bug at q_rope.
    if (cfg.family != Family::llama)
      throw DumpError(
          fmt::format("{}: unpermute: {} is a {} model, whose GGUF Q/K rows are not permuted "
                      "(only llama-family GGUFs are): remove unpermute from the mapping",
                      where, cfg.name, family_name(cfg.family)));
    if (cfg.qk_rows_permuted)
      throw DumpError(
          fmt::format("{}: unpermute: the model is loaded with its GGUF's permuted Q/K rows, so the "
                      "reference is in the engine's order already: remove unpermute from the mapping",
                      where));
    const int heads = permute_heads_of(cfg, src);
    if (std::int64_t(heads) * cfg.head_dim != *w || cfg.head_dim % 2)
      throw DumpError(fmt::format("{}: unpermute: {} needs {} heads of an even head_dim filling {} elements",
                                  where, src.unpermute, heads, *w));
  }
  return p;
}

double scale_factor(const Source& src, const ModelConfig& cfg, const std::string& where) {
  if (src.scale.empty()) return 1.0;
  if (src.scale == "1/sqrt(d_k)" || src.scale == "1/sqrt(head_dim)") {
    const int d = src.scale == "1/sqrt(d_k)" ? cfg.gdn_k_dim : cfg.head_dim;
    if (d <= 0)
      throw DumpError(fmt::format("{}: scale {}: the model {} has no {}", where, src.scale, cfg.name,
                                  src.scale == "1/sqrt(d_k)" ? "GDN key head dim" : "head dim"));
    return 1.0 / std::sqrt(double(d));
  }
  return std::stod(src.scale);  // checked when the mapping was read
}

namespace {

Tensor scaled(Tensor t, double s) {
  if (s == 1.0) return t;
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, t.at(i) * s);
  return t;
}

}  // namespace

Tensor to_catalog(const Tensor& in, const Source& src, const ModelConfig& cfg, std::string_view stage,
                  int pos0, int n_tokens, const std::string& where) {
  const RowPick p = pick_rows(in.shape(), src, cfg, stage, pos0, n_tokens, where);
  const double s = scale_factor(src, cfg, where);
  const Tensor t = src.transpose.empty() ? in : transpose(in, src.transpose);
  const Tensor flat = t.reshaped({p.rows, p.row_width});
  Tensor out(t.dtype(), {p.out, p.width});
  const std::size_t es = dtype_size(t.dtype());
  for (std::int64_t r = 0; r < p.out; ++r)
    std::memcpy(out.raw() + std::size_t(r * p.width) * es,
                flat.raw() + std::size_t((p.first + r) * p.row_width + p.part) * es,
                std::size_t(p.width) * es);
  if (!src.unpermute.empty()) out = permute_heads(out, cfg.head_dim, true);
  return scaled(std::move(out), s);
}

Tensor from_catalog(const Tensor& rows_in, const Source& src, const ModelConfig& cfg, std::string_view stage,
                    const std::string& where) {
  const auto w = stage_width(cfg, stage);
  const double s = scale_factor(src, cfg, where);
  // A width `cfg` does not know (export's config from a trace carries no GDN sizes): the trace's
  // rows are the catalog's already.
  if (!w || *w <= 0) return scaled(rows_in, 1.0 / s);
  Tensor t = scaled(rows_in.reshaped({rows_in.numel() / *w, *w}), 1.0 / s);
  if (!src.unpermute.empty()) t = permute_heads(t, cfg.head_dim, false);
  if (!src.transpose.empty()) {
    if (src.transpose != std::vector<int>{1, 0})
      throw DumpError(fmt::format("{}: export can only undo transpose [1, 0]", where));
    t = transpose(t, {1, 0});
  }
  return t;
}

}  // namespace ds::dump
