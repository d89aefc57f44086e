#include "synthetic.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "ops.h"
#include "parallel.h"

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
    case Family::qwen3moe:
      c.rope_theta = 1e6;
      c.norm_eps = 1e-6;
      c.qk_norm = true;
      break;
    default: break;
  }
  return c;
}

ModelConfig gpt2(int layers, int hidden, int heads, int ffn, int vocab, int positions) {
  ModelConfig c = decoder(Family::gpt2, layers, hidden, heads, heads, hidden / heads, ffn, vocab);
  c.layer_kinds.assign(std::size_t(layers), BlockKind::gpt2);
  c.max_positions = positions;
  c.norm_eps = 1e-5;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tied_embeddings = true;
  c.attn_scale_divide = true;
  return c;
}

// Qwen3.5 dense hybrid: every `interval`-th layer is gated full attention, the rest GDN.
ModelConfig qwen35(int layers, int interval, int hidden, int heads, int kv, int head_dim, int ffn, int vocab,
                   int nk, int nv, int dk, int dv) {
  ModelConfig c = decoder(Family::qwen35, layers, hidden, heads, kv, head_dim, ffn, vocab);
  c.rope_theta = 1e7;
  c.norm_eps = 1e-6;
  c.partial_rotary = 0.25;
  c.qk_norm = true;
  c.norm_plus_one = true;
  c.full_attention_interval = interval;
  c.gdn_k_heads = nk;
  c.gdn_v_heads = nv;
  c.gdn_k_dim = dk;
  c.gdn_v_dim = dv;
  c.conv_kernel = 4;
  for (int l = 0; l < layers; ++l)
    c.layer_kinds[std::size_t(l)] = (l + 1) % interval == 0 ? BlockKind::gated_attn : BlockKind::gdn;
  return c;
}

// A mixture-of-experts FFN of `experts` SwiGLU experts of width `expert_ffn`, `used` per token.
ModelConfig moe(ModelConfig c, int experts, int used, int expert_ffn) {
  c.n_experts = experts;
  c.n_experts_used = used;
  c.expert_ffn = expert_ffn;
  if (c.family == Family::qwen3moe || c.family == Family::qwen3next) {
    c.moe_routing = MoeRouting::softmax_topk;
    c.moe_norm_topk = true;
  } else {  // Mixtral: llama with experts
    c.arch = "mixtral";
    c.moe_routing = MoeRouting::topk_softmax;
  }
  return c;
}

// Qwen3-Next: the Qwen3.5 hybrid `c` with every FFN a MoE of `experts` (top `used`, renormalised)
// plus a shared expert of width `shared_ffn` behind its sigmoid gate.
ModelConfig qwen3next(ModelConfig c, int experts, int used, int expert_ffn, int shared_ffn) {
  c.family = Family::qwen3next;
  c = moe(c, experts, used, expert_ffn);
  c.shared_expert_ffn = shared_ffn;
  return c;
}

ModelConfig tied(ModelConfig c) {
  c.tied_embeddings = true;
  return c;
}

const Preset kPresets[] = {
    {"llama-tiny", [] { return decoder(Family::llama, 2, 64, 4, 2, 16, 128, 256); }},
    {"qwen2-tiny", [] { return decoder(Family::qwen2, 2, 64, 4, 2, 16, 128, 256); }},
    // Deep enough to watch error accumulate layer after layer (drift-start tests).
    {"llama-deep-tiny", [] { return decoder(Family::llama, 12, 64, 4, 2, 16, 128, 256); }},
    // Explicit head_dim != hidden / heads, as in Qwen3-0.6B.
    {"qwen3-tiny", [] { return decoder(Family::qwen3, 2, 64, 4, 2, 32, 128, 256); }},
    {"gpt2-tiny", [] { return gpt2(2, 64, 4, 256, 256, 64); }},
    // rho = n_v / n_k = 2, so the grouped and tiled head maps differ.
    {"qwen35-tiny", [] { return qwen35(4, 2, 64, 4, 2, 16, 128, 256, 2, 4, 16, 16); }},
    // Qwen3-MoE: every FFN 16 experts, top-4, renormalised (norm_topk_prob); Mixtral: 8 experts,
    // top-2, softmax over the chosen two.
    {"qwen3moe-tiny", [] { return moe(decoder(Family::qwen3moe, 2, 64, 4, 2, 32, 128, 256), 16, 4, 32); }},
    {"mixtral-tiny", [] { return moe(decoder(Family::llama, 2, 64, 4, 2, 16, 64, 256), 8, 2, 64); }},
    // norm_topk_prob false (transformers' Qwen3MoeConfig default, Qwen2-MoE's and OLMoE's shipped
    // value): the chosen softmax weights sum to less than one, and softmax before or after the top-k
    // is no longer the same function.
    {"qwen3moe-unnormed-tiny",
     [] {
       ModelConfig c = moe(decoder(Family::qwen3moe, 2, 64, 4, 2, 32, 128, 256), 16, 4, 32);
       c.moe_norm_topk = false;
       return c;
     }},
    // Qwen3-Next at tiny size: qwen35-tiny's hybrid with 16 experts of width 32, top-4, and a
    // shared expert of width 48 (another width than the experts', so the two cannot be swapped).
    {"qwen3next-tiny",
     [] { return qwen3next(qwen35(4, 2, 64, 4, 2, 16, 128, 256, 2, 4, 16, 16), 16, 4, 32, 48); }},
    {"qwen2.5-0.5b", [] { return tied(decoder(Family::qwen2, 24, 896, 14, 2, 64, 4864, 151936)); }},
    {"qwen3-0.6b", [] { return tied(decoder(Family::qwen3, 28, 1024, 16, 8, 128, 3072, 151936)); }},
    {"llama3.2-1b",
     [] {
       ModelConfig c = tied(decoder(Family::llama, 16, 2048, 32, 8, 64, 8192, 128256));
       c.rope_freq_factors = llama3_freq_factors(64, c.rope_theta, 32.0, 1.0, 4.0, 8192.0);
       return c;
     }},
    // The 8B class nightly jobs serve (issue 54), from their config.json: Llama-3.1-8B, 32 layers,
    // hidden 4096, 32 q / 8 kv heads of 128, ffn 14336, vocab 128256, untied, llama3 RoPE scaling
    // with factor 8 (3.2's is 32); Qwen3-8B, 36 layers, hidden 4096, 32 q / 8 kv heads of 128, ffn
    // 12288, vocab 151936, QK-norm, untied. 16.1 and 16.4 GB in bf16.
    {"llama3.1-8b",
     [] {
       ModelConfig c = decoder(Family::llama, 32, 4096, 32, 8, 128, 14336, 128256);
       c.rope_freq_factors = llama3_freq_factors(128, c.rope_theta, 8.0, 1.0, 4.0, 8192.0);
       return c;
     }},
    {"qwen3-8b", [] { return decoder(Family::qwen3, 36, 4096, 32, 8, 128, 12288, 151936); }},
    {"gpt2-small", [] { return gpt2(12, 768, 12, 3072, 50257, 1024); }},
    // Qwen3-30B-A3B's config.json: 48 layers, hidden 2048, 32 q / 4 kv heads of 128, 128 experts of
    // width 768 (moe_intermediate_size), 8 per token, norm_topk_prob true; intermediate_size 6144
    // is unused by its all-MoE layers. 60 GB in bf16: run it with --layers 1.
    {"qwen3-30b-a3b",
     [] { return moe(decoder(Family::qwen3moe, 48, 2048, 32, 4, 128, 6144, 151936), 128, 8, 768); }},
    // Qwen3-Next-80B-A3B's config.json: 48 layers (every 4th gated full attention), hidden 2048,
    // 16 q / 2 kv heads of 256, GDN 16 key / 32 value heads of 128, 512 experts of width 512, 10
    // per token, norm_topk_prob true, a shared expert of 512, vocab 151936; intermediate_size 5120
    // is unused by its all-MoE layers. 160 GB in bf16: run it with --layers 1.
    {"qwen3-next-80b-a3b",
     [] {
       return qwen3next(qwen35(48, 4, 2048, 16, 2, 256, 5120, 151936, 16, 32, 128, 128), 512, 10, 512, 512);
     }},
    // Llama-3 RoPE scaling at tiny size. Its factors slow the low-frequency pairs, which only shows
    // at long positions: a candidate that drops them passes short prompts and fails past ~2048.
    {"llama3-tiny",
     [] {
       ModelConfig c = decoder(Family::llama, 2, 64, 4, 2, 16, 128, 256);
       c.rope_theta = 500000.0;
       c.max_positions = 8192;
       c.rope_freq_factors = llama3_freq_factors(16, c.rope_theta, 32.0, 1.0, 4.0, 8192.0);
       return c;
     }},
    // Widths off every tile: hidden 90 and ffn 170 leave a tail after 16-byte vectors of f32 or f16
    // (neither is a multiple of 4), 5 heads of 18 over one KV head, vocab 300 (GEMV rows not a
    // multiple of a block's 8 rows). Real checkpoints are not tile multiples either (896 and 151936
    // are not multiples of 256), so a kernel that only handles whole tiles fails here, at tiny size.
    {"qwen2-tails-tiny", [] { return decoder(Family::qwen2, 2, 90, 5, 1, 18, 170, 300); }},
    // The same widths for the other families (`run --widths odd` picks a preset's family's one);
    // Qwen3's head_dim 26 is again no multiple of anything and not hidden / heads.
    {"llama-tails-tiny", [] { return decoder(Family::llama, 2, 90, 5, 1, 18, 170, 300); }},
    {"qwen3-tails-tiny", [] { return decoder(Family::qwen3, 2, 90, 5, 1, 26, 170, 300); }},
    {"gpt2-tails-tiny", [] { return gpt2(2, 90, 5, 170, 300, 64); }},
    // And Qwen3-MoE's: 7 experts of width 170, 3 per token (no power of two anywhere in the routing).
    {"qwen3moe-tails-tiny",
     [] { return moe(decoder(Family::qwen3moe, 2, 90, 5, 1, 26, 170, 300), 7, 3, 170); }},
    // Real widths at the cost of one layer and a small vocabulary, where kernels switch paths on
    // size (a split-K reduction, a wider tile, another shared-memory plan): hidden 2304 (past 2048,
    // gemma-2-2b's width; 18 heads of 128 over 2 KV heads), ffn 8192 (the columns of llama3.2-1b's
    // `down`), GPT-2's 4x ffn; Qwen3-MoE's 128 experts of width 64, 8 per token (ids up to 127, as
    // Qwen3-30B-A3B's). `check` runs a tiny preset's family's one.
    {"llama-wide", [] { return decoder(Family::llama, 1, 2304, 18, 2, 128, 8192, 256); }},
    {"qwen2-wide", [] { return decoder(Family::qwen2, 1, 2304, 18, 2, 128, 8192, 256); }},
    {"qwen3-wide", [] { return decoder(Family::qwen3, 1, 2304, 18, 2, 128, 8192, 256); }},
    {"gpt2-wide", [] { return gpt2(1, 2304, 18, 9216, 256, 64); }},
    {"qwen3moe-wide",
     [] { return moe(decoder(Family::qwen3moe, 1, 2304, 18, 2, 128, 8192, 256), 128, 8, 64); }},
    // Mixtral's 8 experts, 2 per token, each as wide as the hidden state; the hybrids' GDN layer at
    // Qwen3-Next's head counts and dims (16 key / 32 value heads of 128), and its 512 experts (ids
    // past 256), 10 per token, beside a shared expert of 512.
    {"mixtral-wide", [] { return moe(decoder(Family::llama, 1, 2304, 18, 2, 128, 8192, 256), 8, 2, 2304); }},
    {"qwen35-wide", [] { return qwen35(1, 4, 2304, 18, 2, 128, 8192, 256, 16, 32, 128, 128); }},
    {"qwen3next-wide",
     [] { return qwen3next(qwen35(1, 4, 2304, 18, 2, 128, 8192, 256, 16, 32, 128, 128), 512, 10, 32, 512); }},
    // Every projection biased (q/k/v, o, gate/up/down): exercises bias paths a kernel can
    // double or drop (a fused epilogue that adds the bias twice).
    {"qwen2-bias-tiny",
     [] {
       ModelConfig c = decoder(Family::qwen2, 2, 64, 4, 2, 16, 128, 256);
       c.o_bias = c.mlp_bias = true;
       return c;
     }},
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

NormalStream::NormalStream(std::uint64_t seed, std::string_view name)
    : state_(fnv1a(name, seed * 0x9E37u + 7)) {}

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

namespace {

// The preset named `<family>SUFFIX` of `preset`'s family (and, with `same_moe`, MoE or not, as it is).
std::string family_preset(std::string_view preset, std::string_view suffix, bool same_moe,
                          std::string_view what) {
  const ModelConfig c = synthetic_config(preset);
  for (const auto& p : kPresets)
    if (p.name.ends_with(suffix) && p.make().family == c.family && (!same_moe || p.make().moe() == c.moe()))
      return std::string(p.name);
  throw std::invalid_argument(
      fmt::format("synthetic:{}: its family has no {} preset ({}) yet", preset, suffix, what));
}

}  // namespace

std::string synthetic_tails_preset(std::string_view preset) {
  return family_preset(preset, "-tails-tiny", false, "widths off every vector and tile multiple");
}

std::string synthetic_wide_preset(std::string_view preset) {
  return family_preset(preset, "-wide", true, "real widths, one layer");
}

ModelConfig synthetic_config(std::string_view preset) {
  for (const auto& p : kPresets)
    if (p.name == preset) {
      ModelConfig c = p.make();
      c.name = fmt::format("synthetic:{}", preset);
      return c;
    }
  throw std::invalid_argument(
      fmt::format("unknown synthetic model '{}' (known: {})", preset, fmt::join(synthetic_presets(), ", ")));
}

DType synthetic_dtype(std::string_view preset) {
  const ModelConfig c = synthetic_config(preset);
  // The real-shape presets of models whose checkpoints ship in bf16 (Qwen, Llama) are generated
  // in bf16, as big as the real thing; GPT-2 ships f32, and the tiny presets stay f32, the
  // weights every other test and golden trace was written against.
  const bool real_shape = c.hidden >= 512;
  return real_shape && c.family != Family::gpt2 ? DType::bf16 : DType::f32;
}

namespace {

// Tables above this many elements are generated in independent chunks (each its own stream),
// in parallel, from a cheaper bell-shaped law (the sum of two 16-bit uniforms, triangular,
// scaled to unit variance; two values per generator step): Box-Muller over a 150k-token
// embedding takes over ten seconds on a small machine, this about one.
constexpr std::int64_t kChunk = std::int64_t(1) << 20;

void fast_fill(float* out, std::int64_t n, std::uint64_t state, double mean, double std) {
  const double scale = std * 2.449489742783178 / 65536.0;  // sqrt(6): unit variance
  for (std::int64_t i = 0; i < n; i += 2) {
    const std::uint64_t z = splitmix(state);
    const double a = double(std::int64_t((z & 0xffff) + ((z >> 16) & 0xffff)) - 65535);
    const double b = double(std::int64_t(((z >> 32) & 0xffff) + (z >> 48)) - 65535);
    out[i] = float(mean + scale * a);
    if (i + 1 < n) out[i + 1] = float(mean + scale * b);
  }
}

// Stores f32 values `from` at `to` (elements from `at` on) in the table's dtype: f32 as is, bf16
// rounded to nearest even, so a bf16 table never exists as f32 in full.
void store(Tensor& to, std::int64_t at, const float* from, std::int64_t n) {
  if (to.dtype() == DType::f32) {
    std::copy(from, from + n, to.data<float>() + at);
    return;
  }
  // Round to nearest even on the bits (what f32_to_bf16 does for finite values, which every
  // generated value is), inline: the general conversion is ten times slower over 136M values.
  std::uint16_t* out = to.data<std::uint16_t>() + at;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(from[i]);
    out[i] = std::uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
  }
}

// The statistics of real checkpoints the weights are drawn to give; docs/synthetic-models.md
// gives the source of each.
constexpr double kEmbedStd = 0.02;        // real embeddings sit near 0.01-0.05
constexpr double kFirstLayerRise = 16.0;  // the first layer's writes swamp the embedding
constexpr double kLayerGrowth = 1.1;      // then the stream grows exponentially with depth
constexpr double kQkGain = 1.5;           // attention logits of std ~2, reaching ~5-10
constexpr double kMassiveOverMedian = 1000.0;
constexpr double kMedianOverRms = 0.674;  // median |x| / RMS of a Gaussian
// RMS of what the writing projections read, for inputs of RMS 1 (the reading projections are
// scaled to give that): attention's weighted mean of v rows (measured, softmax of logits of std
// ~2 over a few positions), silu(g)·u and gelu_new(g) for g, u ~ N(0, 1) (sqrt of E[.^2]).
constexpr double kAttnOutRms = 0.7;
constexpr double kSiluMulRms = 0.597;
constexpr double kGeluRms = 0.653;

// What every weight of one model is generated from: the run's seed and the preset's dtype.
struct Gen {
  std::uint64_t seed;
  DType dtype;
};

void fill(WeightStore& ws, const Gen& g, const std::string& name, Shape shape, double mean, double std) {
  const std::uint64_t seed = g.seed;
  Tensor t(g.dtype, std::move(shape));
  const std::int64_t n = t.numel();
  if (n <= kChunk) {
    NormalStream rng(seed, name);
    std::vector<float> v(std::size_t(n), 0.0f);
    for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = float(mean + std * rng.next());
    store(t, 0, v.data(), n);
  } else {
    parallel_for((n + kChunk - 1) / kChunk, n * 64, [&](std::int64_t b, std::int64_t e) {
      std::vector<float> v(std::size_t(kChunk), 0.0f);
      for (std::int64_t ch = b; ch < e; ++ch) {
        const std::int64_t begin = ch * kChunk, end = std::min(n, begin + kChunk);
        fast_fill(v.data(), end - begin, fnv1a(fmt::format("{}#{}", name, ch), seed * 0x9E37u + 7), mean,
                  std);
        store(t, begin, v.data(), end - begin);
      }
    });
  }
  ws.put(name, std::move(t));
}

// (1 + w) norm weights chosen so that 1 + w is exact in f32: a GGUF file storing 1 + w (as
// llama.cpp's converter does) then gives bit-identical reference outputs. `mean` is the mean of
// w, the stored value (the applied weight is 1 + w).
void fill_plus_one(WeightStore& ws, std::uint64_t seed, const std::string& name, std::int64_t n,
                   double mean = 0.0) {
  Tensor t(DType::f32, {n});
  NormalStream rng(seed, name);
  for (std::int64_t i = 0; i < n; ++i)
    t.data<float>()[i] = float(double(float(1.0 + mean + 0.05 * rng.next())) - 1.0);
  ws.put(name, std::move(t));
}

// A norm weight whose applied value is `applied` on average (5% spread), stored as the family
// stores it: (1 + w) families keep w = applied - 1.
void norm_weight(WeightStore& ws, const Gen& g, const ModelConfig& c, const std::string& name, std::int64_t n,
                 double applied = 1.0) {
  if (c.norm_plus_one)
    fill_plus_one(ws, g.seed, name, n, applied - 1.0);
  else
    fill(ws, g, name, {n}, applied, 0.05 * applied);
}

// A projection reading a normalised input of `fan_in` elements (RMS about 1): std gain/sqrt(fan_in),
// so its output has RMS `gain` at every width, tiny or real.
double reading(double gain, std::int64_t fan_in) { return gain / std::sqrt(double(fan_in)); }

void attention_weights(WeightStore& ws, const Gen& g, const ModelConfig& c, const SyntheticScales& s, int l,
                       std::int64_t q_rows) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  const std::int64_t D = c.hidden, Q = c.q_dim(), KV = c.kv_dim();
  // Without a q/k norm the projections set the attention-logit scale; with one, its weights do.
  const double qk_gain = c.qk_norm ? 1.0 : s.qk_gain;
  fill(ws, g, n("attn_q.weight"), {q_rows, D}, 0.0, reading(qk_gain, D));
  fill(ws, g, n("attn_k.weight"), {KV, D}, 0.0, reading(qk_gain, D));
  fill(ws, g, n("attn_v.weight"), {KV, D}, 0.0, reading(1.0, D));
  if (c.qkv_bias) {
    fill(ws, g, n("attn_q.bias"), {q_rows}, 0.0, 0.02);
    fill(ws, g, n("attn_k.bias"), {KV}, 0.0, 0.02);
    fill(ws, g, n("attn_v.bias"), {KV}, 0.0, 0.02);
  }
  if (c.qk_norm)
    for (auto role : {"attn_q_norm.weight", "attn_k_norm.weight"})
      norm_weight(ws, g, c, n(role), c.head_dim, s.qk_gain);
  fill(ws, g, n("attn_output.weight"), {D, Q}, 0.0,
       s.write[std::size_t(l)] / (kAttnOutRms * std::sqrt(double(Q))));
  if (c.o_bias) fill(ws, g, n("attn_output.bias"), {D}, 0.0, 0.02);
}

void swiglu_weights(WeightStore& ws, const Gen& g, const ModelConfig& c, const SyntheticScales& s, int l) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  const std::int64_t D = c.hidden, F = c.ffn;
  norm_weight(ws, g, c, n("ffn_norm.weight"), D);
  fill(ws, g, n("ffn_gate.weight"), {F, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_up.weight"), {F, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_down.weight"), {D, F}, 0.0,
       s.write[std::size_t(l)] / (kSiluMulRms * std::sqrt(double(F))));
  if (c.mlp_bias) {
    fill(ws, g, n("ffn_gate.bias"), {F}, 0.0, 0.02);
    fill(ws, g, n("ffn_up.bias"), {F}, 0.0, 0.02);
    fill(ws, g, n("ffn_down.bias"), {D}, 0.0, 0.02);
  }
}

// The router reads the normalised input at unit gain: logits of std about 1 across experts, so
// the top-k margins are a fraction of a unit and near-ties happen. Each expert is a SwiGLU MLP;
// the k outputs are combined with weights summing to about 1, which shrinks their RMS by about
// sqrt(k) (for even weights), so the down projections are that much larger.
void moe_weights(WeightStore& ws, const Gen& g, const ModelConfig& c, const SyntheticScales& s, int l) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  const std::int64_t D = c.hidden, F = c.expert_ffn, E = c.n_experts;
  norm_weight(ws, g, c, n("ffn_norm.weight"), D);
  fill(ws, g, n("ffn_gate_inp.weight"), {E, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_gate_exps.weight"), {E, F, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_up_exps.weight"), {E, F, D}, 0.0, reading(1.0, D));
  // With a shared expert the layer's write is split between the two halves: the routed experts'
  // by sqrt(2) less, the shared expert's by sqrt(2) more, its sigmoid gate (logits of std about
  // 1, so about 0.5 on average) taking half of that back.
  const double share = c.shared_expert() ? std::sqrt(0.5) : 1.0;
  fill(ws, g, n("ffn_down_exps.weight"), {E, D, F}, 0.0,
       share * s.write[std::size_t(l)] * std::sqrt(double(c.n_experts_used)) /
           (kSiluMulRms * std::sqrt(double(F))));
  if (!c.shared_expert()) return;
  const std::int64_t S = c.shared_expert_ffn;
  fill(ws, g, n("ffn_gate_shexp.weight"), {S, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_up_shexp.weight"), {S, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ffn_down_shexp.weight"), {D, S}, 0.0,
       std::sqrt(2.0) * s.write[std::size_t(l)] / (kSiluMulRms * std::sqrt(double(S))));
  fill(ws, g, n("ffn_gate_inp_shexp.weight"), {1, D}, 0.0, reading(1.0, D));
}

void gpt2_weights(WeightStore& ws, const Gen& g, const ModelConfig& c, const SyntheticScales& s, int l) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  const std::int64_t D = c.hidden, F = c.ffn;
  const double write = s.write[std::size_t(l)];
  auto affine = [&](std::string_view stem, Shape w_shape, std::int64_t out, double w_mean, double w_std) {
    fill(ws, g, n(fmt::format("{}.weight", stem)), std::move(w_shape), w_mean, w_std);
    fill(ws, g, n(fmt::format("{}.bias", stem)), {out}, 0.0, 0.02);
  };
  affine("attn_norm", {D}, D, 1.0, 0.05);
  // One c_attn matrix for q, k and v: all three at the q/k gain.
  affine("attn_qkv", {3 * D, D}, 3 * D, 0.0, reading(s.qk_gain, D));
  affine("attn_output", {D, D}, D, 0.0, write / (kAttnOutRms * s.qk_gain * std::sqrt(double(D))));
  affine("ffn_norm", {D}, D, 1.0, 0.05);
  affine("ffn_up", {F, D}, F, 0.0, reading(1.0, D));
  affine("ffn_down", {D, F}, D, 0.0, write / (kGeluRms * std::sqrt(double(F))));
}

void gdn_weights(WeightStore& ws, const Gen& g, const ModelConfig& c, const SyntheticScales& s, int l) {
  auto n = [&](std::string_view role) { return layer_weight(l, role); };
  const std::int64_t D = c.hidden, nv = c.gdn_v_heads, C = c.gdn_conv_dim();
  fill(ws, g, n("attn_qkv.weight"), {C, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("attn_gate.weight"), {c.gdn_value_dim(), D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ssm_beta.weight"), {nv, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ssm_alpha.weight"), {nv, D}, 0.0, reading(1.0, D));
  fill(ws, g, n("ssm_conv1d.weight"), {C, c.conv_kernel}, 0.0, 0.3);
  fill(ws, g, n("ssm_dt.bias"), {nv}, 0.0, 0.5);
  // ssm_a = -exp(A_log) (the GGUF form), A_log ~ N(0, 0.5): decay rates around one.
  Tensor a(DType::f32, {nv});
  NormalStream rng(g.seed, n("ssm_a"));
  for (std::int64_t i = 0; i < nv; ++i) a.data<float>()[i] = -std::exp(float(0.5 * rng.next()));
  ws.put(n("ssm_a"), std::move(a));
  fill(ws, g, n("ssm_norm.weight"), {c.gdn_v_dim}, 1.0, 0.05);
  // The gated norm's output is silu(z)-scaled, z of RMS 1: the same RMS as silu(gate) * up.
  fill(ws, g, n("ssm_out.weight"), {D, c.gdn_value_dim()}, 0.0,
       s.write[std::size_t(l)] / (kSiluMulRms * std::sqrt(double(c.gdn_value_dim()))));
}

// Massive activations (Sun et al. 2024): two fixed channels of the sink token's residual stream
// hold +M and -M, a thousand times the median activation, and stay there through every layer.
// Real checkpoints write them in an early layer's MLP; a random MLP cannot single out one token
// cleanly (every row it reads shares the attention's average), so the sink's embedding row holds
// them from the start. The final norm's weights on those channels are zero (trained models carry
// small ones there), so a tied head does not read M back as the sink token's own logit.
void plant_massive_activation(Model& m, const SyntheticScales& s) {
  const std::int64_t D = m.config.hidden;
  Tensor& embd = *m.weights.find_mutable("token_embd.weight");
  Tensor& final_norm = *m.weights.find_mutable("output_norm.weight");
  const double zero_weight = m.config.norm_plus_one ? -1.0 : 0.0;
  for (std::size_t i = 0; i < s.massive_channels.size(); ++i) {
    const std::int64_t ch = s.massive_channels[i];
    embd.set(std::int64_t(kSinkToken) * D + ch, i % 2 == 0 ? s.massive : -s.massive);
    final_norm.set(ch, zero_weight);
  }
}

}  // namespace

SyntheticScales synthetic_scales(const ModelConfig& c) {
  SyntheticScales s;
  s.embed_std = kEmbedStd;
  s.qk_gain = kQkGain;
  // GPT-2 adds a position embedding of the same scale to the token's.
  double before = kEmbedStd * (c.family == Family::gpt2 ? std::sqrt(2.0) : 1.0);
  double r = kFirstLayerRise * before;
  for (int l = 0; l < c.n_layers; ++l, r *= kLayerGrowth) {
    s.residual.push_back(r);
    // Attention and the MLP each write half the variance the layer adds.
    s.write.push_back(std::sqrt((r * r - before * before) / 2));
    before = r;
  }
  // A thousand times the median at mid depth: more before it, less after, as the stream grows.
  s.massive = kMassiveOverMedian * kMedianOverRms * s.residual[std::size_t(c.n_layers / 2)];
  s.massive_channels = {c.hidden / 3, (2 * c.hidden) / 3 + 1};
  s.logit_std = std::sqrt(2 * std::log(double(c.vocab)));
  const double head_std = c.tied_embeddings ? kEmbedStd : 1.0 / std::sqrt(double(c.hidden));
  s.final_norm = s.logit_std / (head_std * std::sqrt(double(c.hidden)));
  return s;
}

Model make_synthetic(std::string_view preset, std::uint64_t seed, int layers) {
  Model m;
  m.config = synthetic_config(preset);
  const SyntheticScales scales = synthetic_scales(m.config);
  auto& c = m.config;
  if (layers > 0 && layers < c.n_layers) {
    c.n_layers = layers;
    c.layer_kinds.resize(std::size_t(layers));
  }
  c.validate();
  auto& ws = m.weights;
  const Gen g{seed, synthetic_dtype(preset)};
  const std::int64_t D = c.hidden;
  fill(ws, g, "token_embd.weight", {c.vocab, D}, 0.0, kEmbedStd);
  if (!c.tied_embeddings) fill(ws, g, "output.weight", {c.vocab, D}, 0.0, reading(1.0, D));
  if (c.family == Family::gpt2) {
    fill(ws, g, "position_embd.weight", {c.max_positions, D}, 0.0, kEmbedStd);
    fill(ws, g, "output_norm.weight", {D}, scales.final_norm, 0.05 * scales.final_norm);
    fill(ws, g, "output_norm.bias", {D}, 0.0, 0.02);
  } else {
    norm_weight(ws, g, c, "output_norm.weight", D, scales.final_norm);
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockKind kind = c.block_kind(l);
    if (kind == BlockKind::gpt2) {
      gpt2_weights(ws, g, c, scales, l);
      continue;
    }
    norm_weight(ws, g, c, layer_weight(l, "attn_norm.weight"), D);
    if (kind == BlockKind::gdn)
      gdn_weights(ws, g, c, scales, l);
    else
      attention_weights(ws, g, c, scales, l,
                        kind == BlockKind::gated_attn ? 2 * std::int64_t(c.q_dim()) : c.q_dim());
    if (c.moe())
      moe_weights(ws, g, c, scales, l);
    else
      swiglu_weights(ws, g, c, scales, l);
  }
  plant_massive_activation(m, scales);
  return m;
}

}  // namespace ds::ref
