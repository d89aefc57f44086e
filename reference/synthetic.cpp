#include "synthetic.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <functional>
#include <stdexcept>

namespace ds::ref {

namespace {

struct Preset {
  std::string_view name;
  ModelConfig (*make)();
};

ModelConfig decoder(Family f, int layers, int hidden, int heads, int kv, int head_dim, int ffn, int vocab) {
  ModelConfig c;
  c.family = f;
  c.n_layers = layers;
  c.hidden = hidden;
  c.n_heads = heads;
  c.n_kv_heads = kv;
  c.head_dim = head_dim;
  c.ffn = ffn;
  c.vocab = vocab;
  c.layer_kinds.assign(std::size_t(layers), BlockKind::decoder);
  switch (f) {
    case Family::llama:
      c.rope_theta = 500000.0;
      c.norm_eps = 1e-5;
      c.rope_mode = RopeMode::neox;  // HF layout (rotate_half); GGUF files are un-permuted on load
      break;
    case Family::qwen2:
      c.rope_theta = 1e6;
      c.norm_eps = 1e-6;
      c.qkv_bias = true;
      break;
    case Family::qwen3:
      c.rope_theta = 1e6;
      c.norm_eps = 1e-6;
      c.qk_norm = true;
      break;
    default: break;
  }
  return c;
}

const Preset kPresets[] = {
    {"llama-tiny", [] { return decoder(Family::llama, 2, 64, 4, 2, 16, 128, 256); }},
    {"qwen2-tiny", [] { return decoder(Family::qwen2, 2, 64, 4, 2, 16, 128, 256); }},
    // Explicit head_dim != hidden / heads, as in Qwen3-0.6B.
    {"qwen3-tiny", [] { return decoder(Family::qwen3, 2, 64, 4, 2, 32, 128, 256); }},
    // Every projection biased (q/k/v, o, gate/up/down): exercises bias paths a kernel can
    // double or drop (seeds/004 #4 double bias).
    {"qwen2-bias-tiny",
     [] {
       ModelConfig c = decoder(Family::qwen2, 2, 64, 4, 2, 16, 128, 256);
       c.o_bias = c.mlp_bias = true;
       return c;
     }},
    {"qwen2.5-0.5b", [] { return decoder(Family::qwen2, 24, 896, 14, 2, 64, 4864, 151936); }},
    {"qwen3-0.6b", [] { return decoder(Family::qwen3, 28, 1024, 16, 8, 128, 3072, 151936); }},
    {"llama3.2-1b", [] { return decoder(Family::llama, 16, 2048, 32, 8, 64, 8192, 128256); }},
};

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

NormalStream::NormalStream(std::uint64_t seed, std::string_view name) : state_(fnv1a(name, seed * 0x9E37u + 7)) {}

double NormalStream::next() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  // Box-Muller on 53-bit uniforms: the same numbers on every platform and library.
  const double u1 = (double(splitmix(state_) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = double(splitmix(state_) >> 11) * 0x1.0p-53;
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2 * M_PI * u2);
  have_spare_ = true;
  return r * std::cos(2 * M_PI * u2);
}

std::vector<std::string> synthetic_presets() {
  std::vector<std::string> out;
  for (const auto& p : kPresets) out.emplace_back(p.name);
  return out;
}

ModelConfig synthetic_config(std::string_view preset) {
  for (const auto& p : kPresets)
    if (p.name == preset) {
      ModelConfig c = p.make();
      c.name = fmt::format("synthetic:{}", preset);
      return c;
    }
  throw std::invalid_argument(fmt::format("unknown synthetic model '{}' (known: {})", preset,
                                          fmt::join(synthetic_presets(), ", ")));
}

Model make_synthetic(std::string_view preset, std::uint64_t seed, int layers) {
  Model m;
  m.config = synthetic_config(preset);
  auto& c = m.config;
  if (layers > 0 && layers < c.n_layers) {
    c.n_layers = layers;
    c.layer_kinds.resize(std::size_t(layers));
  }
  c.validate();
  auto fill = [&](const std::string& name, Shape shape, double mean, double std) {
    Tensor t(DType::f32, std::move(shape));
    NormalStream rng(seed, name);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(mean + std * rng.next());
    m.weights.put(name, std::move(t));
  };
  const std::int64_t D = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn;
  // Embeddings of unit scale, so the residual stream starts at the magnitude real models have
  // after their first layers.
  fill("token_embd.weight", {c.vocab, D}, 0.0, 1.0);
  fill("output_norm.weight", {D}, 1.0, 0.05);
  if (!c.tied_embeddings) fill("output.weight", {c.vocab, D}, 0.0, 0.02);
  for (int l = 0; l < c.n_layers; ++l) {
    auto n = [&](std::string_view role) { return layer_weight(l, role); };
    fill(n("attn_norm.weight"), {D}, 1.0, 0.05);
    fill(n("attn_q.weight"), {Q, D}, 0.0, 0.02);
    fill(n("attn_k.weight"), {KV, D}, 0.0, 0.02);
    fill(n("attn_v.weight"), {KV, D}, 0.0, 0.02);
    if (c.qkv_bias) {
      fill(n("attn_q.bias"), {Q}, 0.0, 0.02);
      fill(n("attn_k.bias"), {KV}, 0.0, 0.02);
      fill(n("attn_v.bias"), {KV}, 0.0, 0.02);
    }
    if (c.qk_norm) {
      fill(n("attn_q_norm.weight"), {c.head_dim}, 1.0, 0.05);
      fill(n("attn_k_norm.weight"), {c.head_dim}, 1.0, 0.05);
    }
    fill(n("attn_output.weight"), {D, Q}, 0.0, 0.02);
    if (c.o_bias) fill(n("attn_output.bias"), {D}, 0.0, 0.02);
    fill(n("ffn_norm.weight"), {D}, 1.0, 0.05);
    fill(n("ffn_gate.weight"), {F, D}, 0.0, 0.02);
    fill(n("ffn_up.weight"), {F, D}, 0.0, 0.02);
    fill(n("ffn_down.weight"), {D, F}, 0.0, 0.02);
    if (c.mlp_bias) {
      fill(n("ffn_gate.bias"), {F}, 0.0, 0.02);
      fill(n("ffn_up.bias"), {F}, 0.0, 0.02);
      fill(n("ffn_down.bias"), {D}, 0.0, 0.02);
    }
  }
  return m;
}

}  // namespace ds::ref
