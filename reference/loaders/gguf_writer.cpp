#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>

#include "family.h"
#include "gdn_layout.h"
#include "gguf.h"
#include "qk_permute.h"

namespace ds::ref {

namespace {

class Buffer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void str(std::string_view s) {
    put<std::uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
  }
  void pad(std::size_t align) { bytes_.resize((bytes_.size() + align - 1) / align * align); }
  std::size_t size() const { return bytes_.size(); }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

constexpr std::size_t kAlign = 32;

struct Kv {
  std::string key;
  std::uint32_t type;  // 4 u32, 6 f32, 7 bool, 8 string, 9 array (of i32)
  std::uint32_t u = 0;
  float f = 0;
  std::string s;
  std::vector<std::int32_t> i32s;
};

// llama.cpp's qwen35 reads rope.dimension_sections (4 entries): how many rotary pairs take each
// of the (time, height, width) position components of multimodal RoPE. A text token's
// components are all its position, so only their sum matters; the pairs are spread as Qwen3.5's
// config does ([11, 11, 10] of 32), the remainder to the first sections.
std::vector<std::int32_t> rope_sections(const ModelConfig& c) {
  const int pairs = c.rotary_dim() / 2;
  std::vector<std::int32_t> s(4, 0);
  for (int i = 0; i < 3; ++i) s[std::size_t(i)] = pairs / 3 + (i < pairs % 3 ? 1 : 0);
  return s;
}

std::string gguf_arch(const ModelConfig& c, const GgufWriteOptions& o) {
  switch (c.family) {
    case Family::llama: return "llama";
    case Family::qwen2: return "qwen2";
    case Family::qwen3: return "qwen3";
    case Family::gpt2: return "gpt2";
    case Family::qwen35: return o.gdn_layout == GgufGdnLayout::legacy_grouped ? "qwen3next" : "qwen35";
    case Family::qwen3moe: return "qwen3moe";
    case Family::qwen3next: return "qwen3next";
  }
  return "?";
}

// Per-pair rope factors that are all equal are linear scaling, which the converter writes as
// metadata; any other set (llama3) travels as the rope_freqs.weight tensor.
std::optional<double> linear_rope_factor(const ModelConfig& c) {
  if (c.rope_freq_factors.empty()) return std::nullopt;
  for (double v : c.rope_freq_factors)
    if (v != c.rope_freq_factors.front()) return std::nullopt;
  return c.rope_freq_factors.front();
}

std::vector<Kv> metadata(const ModelConfig& c, const GgufWriteOptions& o) {
  const std::string a = gguf_arch(c, o);
  auto u = [&](std::string k, int v) { return Kv{a + "." + k, 4, std::uint32_t(v)}; };
  auto f = [&](std::string k, double v) { return Kv{a + "." + k, 6, 0, float(v)}; };
  std::vector<Kv> kv = {
      {"general.architecture", 8, 0, 0, a},
      {"general.alignment", 4, std::uint32_t(kAlign)},
      // llama.cpp refuses a file without a tokenizer model; "none" is its vocab-less kind, which
      // needs no token list (a synthetic model has no text to encode).
      {"tokenizer.ggml.model", 8, 0, 0, "none"},
      u("block_count", c.n_layers),
      u("context_length", c.max_positions),
      u("embedding_length", c.hidden),
      // A llama MoE (Mixtral) has no dense FFN: llama.cpp reads its experts' width here.
      u("feed_forward_length", c.moe() && c.family == Family::llama ? c.expert_ffn : c.ffn),
      u("attention.head_count", c.n_heads),
      u("attention.head_count_kv", c.n_kv_heads),
      u("attention.key_length", c.head_dim),
      u("attention.value_length", c.head_dim),
      u("vocab_size", c.vocab),
  };
  if (c.family == Family::gpt2) {
    kv.push_back(f("attention.layer_norm_epsilon", c.norm_eps));
  } else {
    kv.push_back(f("attention.layer_norm_rms_epsilon", c.norm_eps));
    kv.push_back(f("rope.freq_base", c.rope_theta));
    kv.push_back(u("rope.dimension_count", c.rotary_dim()));
    if (const auto factor = linear_rope_factor(c)) {
      kv.push_back({a + ".rope.scaling.type", 8, 0, 0, "linear"});
      kv.push_back(f("rope.scaling.factor", *factor));
    }
  }
  if (c.sliding_window > 0) kv.push_back(u("attention.sliding_window", c.sliding_window));
  if (c.moe()) {
    // llama.cpp's keys; a llama MoE (Mixtral) takes its expert width from feed_forward_length.
    kv.push_back(u("expert_count", c.n_experts));
    kv.push_back(u("expert_used_count", c.n_experts_used));
    if (c.family == Family::qwen3moe || c.family == Family::qwen3next) {
      kv.push_back(u("expert_feed_forward_length", c.expert_ffn));
      kv.push_back({a + ".expert_weights_norm", 7, std::uint32_t(c.moe_norm_topk)});
    }
    if (c.shared_expert()) kv.push_back(u("expert_shared_feed_forward_length", c.shared_expert_ffn));
  }
  if (c.family == Family::qwen35)
    kv.push_back({a + ".rope.dimension_sections", 9, 0, 0, {}, rope_sections(c)});
  if (is_gdn_hybrid(c.family)) {
    kv.push_back(u("ssm.conv_kernel", c.conv_kernel));
    kv.push_back(u("ssm.state_size", c.gdn_k_dim));
    kv.push_back(u("ssm.group_count", c.gdn_k_heads));
    kv.push_back(u("ssm.time_step_rank", c.gdn_v_heads));
    kv.push_back(u("ssm.inner_size", c.gdn_v_dim * c.gdn_v_heads));
    kv.push_back(u("full_attention_interval", c.full_attention_interval));
  }
  return kv;
}

// Weight `name` of `m` as f32, as the converter writes it: (1 + w) norms pre-added, llama's Q/K rows
// permuted; `out` receives its name in the file.
Tensor file_tensor(const Model& m, const std::string& name, std::string& out) {
  const ModelConfig& c = m.config;
  out = name;
  // A quantized weight is decoded here, not through the store, which would keep the f32 copy.
  const QuantMatrix* q = m.weights.find_quantized(name);
  Tensor v = q ? q->dequantized() : m.weights.get(name).to(DType::f32);
  const bool plus_one_norm = c.norm_plus_one && name.find("norm.weight") != std::string::npos &&
                             name.find("ssm_norm") == std::string::npos;
  if (plus_one_norm)
    for (std::int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = float(1.0 + double(v.data<float>()[i]));
  if (is_gdn_hybrid(c.family))
    if (auto at = out.find(".ffn_norm."); at != std::string::npos)
      out.replace(at, 10, ".post_attention_norm.");
  // llama.cpp's qwen3next loads the shared-expert gate as a vector {n_embd}.
  if (name.ends_with(".ffn_gate_inp_shexp.weight")) v = v.reshaped({v.numel()});
  if (c.family == Family::llama && !c.qk_rows_permuted)
    for (const auto& [role, heads] : {std::pair{".attn_q.", c.n_heads}, std::pair{".attn_k.", c.n_kv_heads}})
      if (name.find(role) != std::string::npos) {
        WeightStore one;
        one.put(name, std::move(v));
        permute_qk(one, name, heads);
        v = one.get(name);
      }
  return v;
}

std::optional<Tensor> rope_freqs_tensor(const ModelConfig& c) {
  if (c.rope_freq_factors.empty() || linear_rope_factor(c)) return std::nullopt;
  Tensor f(DType::f32, {std::int64_t(c.rope_freq_factors.size())});
  for (std::size_t i = 0; i < c.rope_freq_factors.size(); ++i)
    f.data<float>()[i] = float(c.rope_freq_factors[i]);
  return f;
}

// Every weight as the converter writes it, at once: what the GDN hybrids' value-head reorder and
// llama.cpp's fused qwen3next projections need (they move columns across tensors).
WeightStore file_weights(const Model& m, const GgufWriteOptions& o) {
  const ModelConfig& c = m.config;
  WeightStore w;
  for (const std::string& name : m.weights.names()) {
    std::string out;
    Tensor v = file_tensor(m, name, out);
    w.put(out, std::move(v));
  }
  if (auto f = rope_freqs_tensor(c)) w.put("rope_freqs.weight", std::move(*f));
  if (c.family == Family::qwen35)
    reorder_gdn_value_heads(
        w, c, c.gdn_head_map,
        o.gdn_layout == GgufGdnLayout::legacy_grouped ? GdnHeadMap::grouped : GdnHeadMap::tiled);
  // llama.cpp's qwen3next: value heads grouped (its graph repeats each key head over its group),
  // q|k|v|z and b|a fused per key head in ssm_in and ssm_beta_alpha.
  if (c.family == Family::qwen3next) {
    reorder_gdn_value_heads(w, c, c.gdn_head_map, GdnHeadMap::grouped);
    fuse_gdn_projections(w, c);
  }
  return w;
}

// One tensor of the file: its name and shape, and how to make its f32 values when its turn to be
// written comes, so that a model is written a tensor at a time (an 8B model's f32 copy would not
// fit beside it).
struct FileEntry {
  std::string name;
  Shape shape;
  std::function<Tensor()> make;
};

std::vector<FileEntry> file_entries(const Model& m, const GgufWriteOptions& o) {
  std::vector<FileEntry> entries;
  if (is_gdn_hybrid(m.config.family)) {
    auto w = std::make_shared<const WeightStore>(file_weights(m, o));
    for (const auto& [name, t] : w->all())
      entries.push_back({name, t.shape(), [w, n = name] { return w->get(n); }});
    return entries;
  }
  for (const std::string& name : m.weights.names()) {
    entries.push_back({name, *m.weights.shape_of(name), [&m, name] {
                         std::string out;
                         return file_tensor(m, name, out);
                       }});
  }
  if (auto f = rope_freqs_tensor(m.config)) {
    auto t = std::make_shared<const Tensor>(std::move(*f));
    entries.push_back({"rope_freqs.weight", t->shape(), [t] { return *t; }});
  }
  std::sort(entries.begin(), entries.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
  return entries;
}

// The layer of a "blk.N." tensor name; -1 for a model-level tensor.
int layer_of(const std::string& name) {
  if (!name.starts_with("blk.")) return -1;
  return std::atoi(name.c_str() + 4);
}

// llama.cpp's `use_more_bits`: the first and last eighth of the layers and every third between
// them take the larger type in a _M mix.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The type of tensor `name` in a file written as `o` says, following llama.cpp's
// llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M (src/llama-quant.cpp) for the tensors our
// families have: Q4_K by default; the output head (or a tied token embedding) Q6_K; attn_v and
// ffn_down Q6_K in the layers use_more_bits picks (attn_v counted over the attention layers only,
// as llama.cpp counts them); a fused attn_qkv Q5_K; for 8 experts (Mixtral) attn_k and attn_v
// Q8_0 and attn_output Q5_K. The router, the GDN conv kernel, position embeddings and vectors stay
// F32, as llama.cpp leaves them unquantized (tensor_allows_quantization). A row length the block
// does not divide falls back as llama.cpp's tensor_type_fallback does: Q4_K to Q5_0, Q5_K to Q5_1,
// Q6_K to Q8_0, and to F16 where 32 does not divide it either.
GgmlType tensor_type(const std::string& name, const Shape& shape, const GgufWriteOptions& o,
                     const ModelConfig& c, const std::vector<FileEntry>& entries) {
  if (shape.size() < 2) return GgmlType::F32;
  if (o.mix == GgufMix::uniform) {
    const GgmlType t = o.matrix_type;
    return t == GgmlType::Q8_0 && shape.back() % 32 ? GgmlType::F32 : t;
  }
  if (name.find("ffn_gate_inp") != std::string::npos || name.find("ssm_conv1d") != std::string::npos ||
      name.starts_with("position_embd"))
    return GgmlType::F32;
  const auto has = [&](std::string_view part) { return name.find(part) != std::string::npos; };
  const bool tied = std::none_of(entries.begin(), entries.end(),
                                 [](const FileEntry& e) { return e.name == "output.weight"; });
  GgmlType t = GgmlType::Q4_K;
  if (name == "output.weight" || (tied && name == "token_embd.weight")) {
    t = GgmlType::Q6_K;
  } else if (has(".attn_v.")) {
    // i_attention_wv / n_attention_wv: this layer's place among the layers with an attn_v.
    int i = 0, n = 0;
    for (const FileEntry& e : entries)
      if (e.name.find(".attn_v.") != std::string::npos) {
        ++n;
        i += layer_of(e.name) < layer_of(name);
      }
    t = c.n_experts == 8 ? GgmlType::Q8_0 : use_more_bits(i, n) ? GgmlType::Q6_K : GgmlType::Q4_K;
  } else if (has(".attn_k.") && c.n_experts == 8) {
    t = GgmlType::Q8_0;
  } else if (has(".attn_output.") && c.n_experts == 8) {
    t = GgmlType::Q5_K;
  } else if (has(".attn_qkv.")) {
    t = GgmlType::Q5_K;
  } else if (has(".ffn_down")) {
    t = use_more_bits(layer_of(name), c.n_layers) ? GgmlType::Q6_K : GgmlType::Q4_K;
  }
  const std::int64_t cols = shape.back();
  if (t == GgmlType::Q8_0 || cols % 256 == 0) return cols % 32 == 0 ? t : GgmlType::F16;
  if (cols % 32 != 0) return GgmlType::F16;
  return t == GgmlType::Q4_K ? GgmlType::Q5_0 : t == GgmlType::Q5_K ? GgmlType::Q5_1 : GgmlType::Q8_0;
}

std::vector<std::byte> encode(const Tensor& t, GgmlType type) {
  const float* x = t.data<float>();
  std::vector<std::byte> out;
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return quantize_blocks(type, x, t.numel());
    case GgmlType::F16:
    case GgmlType::BF16:
      out.resize(std::size_t(t.numel()) * 2);
      for (std::int64_t i = 0; i < t.numel(); ++i) {
        const std::uint16_t b = type == GgmlType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
        std::memcpy(out.data() + 2 * i, &b, 2);
      }
      return out;
    default:
      out.resize(t.nbytes());
      std::memcpy(out.data(), x, t.nbytes());
      return out;
  }
}

}  // namespace

void write_gguf(const Model& model, const std::string& path, const GgufWriteOptions& options) {
  const std::vector<FileEntry> entries = file_entries(model, options);
  Buffer head;
  head.put<std::uint32_t>(0x46554747);  // "GGUF"
  head.put<std::uint32_t>(3);
  head.put<std::uint64_t>(entries.size());
  auto kv = metadata(model.config, options);
  for (const auto& [key, value] : options.extra_u32)
    kv.push_back({gguf_arch(model.config, options) + "." + key, 4, value});
  head.put<std::uint64_t>(kv.size());
  for (const auto& e : kv) {
    head.str(e.key);
    head.put<std::uint32_t>(e.type);
    if (e.type == 4) head.put<std::uint32_t>(e.u);
    if (e.type == 6) head.put<float>(e.f);
    if (e.type == 7) head.put<std::uint8_t>(std::uint8_t(e.u != 0));
    if (e.type == 8) head.str(e.s);
    if (e.type == 9) {
      head.put<std::uint32_t>(5);  // i32 elements
      head.put<std::uint64_t>(e.i32s.size());
      for (std::int32_t v : e.i32s) head.put<std::int32_t>(v);
    }
  }
  // The tensor table first (offsets follow from the types and shapes), then the data a tensor at a time.
  std::vector<GgmlType> types;
  std::uint64_t offset = 0;
  for (const FileEntry& e : entries) {
    // Matrices and stacks of them (MoE experts, [experts, out, in]) in the matrix type, or the mix's.
    const GgmlType type = tensor_type(e.name, e.shape, options, model.config, entries);
    if (options.mix == GgufMix::uniform && type != GgmlType::F32 && type != GgmlType::F16 &&
        type != GgmlType::BF16 && type != GgmlType::Q8_0)
      throw ModelError(fmt::format("{}: writing {} tensors is not supported", path,
                                   ggml_type_info(std::uint32_t(type))->name));
    offset = (offset + kAlign - 1) / kAlign * kAlign;
    head.str(e.name);
    head.put<std::uint32_t>(std::uint32_t(e.shape.size()));
    for (auto d = e.shape.rbegin(); d != e.shape.rend(); ++d) head.put<std::uint64_t>(std::uint64_t(*d));
    head.put<std::uint32_t>(std::uint32_t(type));
    head.put<std::uint64_t>(offset);
    offset += std::uint64_t(ggml_nbytes(*ggml_type_info(std::uint32_t(type)), numel(e.shape)));
    types.push_back(type);
  }
  head.pad(kAlign);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ModelError(fmt::format("{}: cannot open for writing", path));
  out.write(reinterpret_cast<const char*>(head.bytes().data()), std::streamsize(head.size()));
  std::uint64_t written = 0;
  const std::vector<char> zeros(kAlign, 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::uint64_t pad = (kAlign - written % kAlign) % kAlign;
    out.write(zeros.data(), std::streamsize(pad));
    const std::vector<std::byte> bytes = encode(entries[i].make(), types[i]);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    written += pad + bytes.size();
  }
  if (!out) throw ModelError(fmt::format("{}: write failed", path));
}

}  // namespace ds::ref
