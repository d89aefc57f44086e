#include "probes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "closest_name.h"
#include "prompt.h"
#include "runner.h"

namespace ds {

namespace {

// The standard deviation large-logits aims the attention scores at, over a prompt of at least
// kLargeLogitsPrompt tokens (136 causal scores a head): 1.5 sigma passes 88.7, where expf
// overflows, so a softmax that skips its max subtraction meets inf in some row.
constexpr double kLargeScoreSigma = 60.0;
constexpr int kLargeLogitsPrompt = 16;
// The row probes scale each prompt row to an RMS, whatever the model's embedding scale (real ones
// sit near 0.02). tiny-rows: an RMS of 1e-3, so mean(x^2) = 1e-6 sits at the norm epsilons models
// ship (1e-6 to 1e-5), where eps inside or outside the square root differ by 40% or more.
constexpr double kTinyRowRms = 1e-3;
// huge-rows: an RMS of 256, values reaching ~1000 and sums of squares ~4e6 at 64 wide, past
// f16's 65504: an accumulator held in half overflows while every stored value still fits.
constexpr double kHugeRowRms = 256.0;
constexpr int kLongPrompt = 2050;  // past 2048, where Llama-3's high-frequency wavelength ends
constexpr int kOddPrompt = 37;     // no multiple of 2, 4, 8, 16 or 32
// tiny-gdn-qk: a GDN head's q/k sum of squares driven to 1e-8, a hundredth of the l2-norm's 1e-6
// epsilon, so that the epsilon, not the values, sets the norm.
constexpr double kTinyQkSumSquares = 1e-8;

const Probe kProbes[] = {
    {"long-positions",
     "RoPE scaling and position arithmetic past 2048 positions (frequency factors ignored, "
     "an angle or offset computed in too few bits)",
     "a prompt of 2050 tokens (shorter where the context is: the prompt and the decode steps end one "
     "position before its end), then the decode steps judged alone "
     "(isolated mode, --from-step 1): one decode step at least"},
    {"large-logits", "softmax stability: exp taken without subtracting the row's max, scores held in f16",
     "every attention layer's q (its QK-norm weight where the model has one) scaled so the scores' "
     "standard deviation is near 60, over a prompt of 16 tokens at least: the largest pass 88.7, where expf "
     "overflows"},
    {"tiny-rows", "epsilon placement in a normalisation, underflow of small activations",
     "the prompt tokens' embedding rows scaled to an RMS of 1e-3: mean(x^2) near the norm epsilon"},
    {"huge-rows", "overflow of f16 intermediates: a sum of squares or an accumulator held in half",
     "the prompt tokens' embedding rows scaled to an RMS of 256: values near 1000, sums of squares past "
     "65504"},
    {"repeated-tokens",
     "ties and equal rows: a max reduction that mishandles ties, a cache keyed by token "
     "id instead of position",
     "one token id repeated over the prompt"},
    {"boundary-ids",
     "the ends of the embedding table and the vocabulary: off-by-one row reads at id 0 "
     "and vocab - 1",
     "the prompt 0, vocab-1, 1, vocab-2, 0, vocab-1, 1, vocab-2"},
    {"odd-length", "tails in T: a prefill whose length is no multiple of a tile or a warp",
     "a prompt of 37 tokens, then two decode steps"},
    {"tiny-gdn-qk",
     "the Gated DeltaNet q/k l2-norm's epsilon: left out, misplaced, or the norm in too few bits",
     "every GDN layer's q and k projection rows scaled so that a head's sum of squares after the conv is "
     "near 1e-8, a hundredth of the l2-norm's epsilon"},
};

double rms(const Tensor& t, std::int64_t from, std::int64_t count, double offset) {
  double ss = 0;
  for (std::int64_t i = from; i < from + count; ++i) ss += (offset + t.at(i)) * (offset + t.at(i));
  return count > 0 ? std::sqrt(ss / double(count)) : 0.0;
}

void scale(Tensor& t, std::int64_t from, std::int64_t count, double s, double offset = 0) {
  for (std::int64_t i = from; i < from + count; ++i) t.set(i, s * (offset + t.at(i)) - offset);
}

Tensor& weight(WeightStore& w, const std::string& name) {
  Tensor* t = w.find_mutable(name);
  if (t == nullptr) throw InputError(fmt::format("--probe: the model has no weight '{}' to rewrite", name));
  return *t;
}

// Scales one attention layer's q so that its scores' standard deviation is kLargeScoreSigma.
// A score is q.k / sqrt(hd): with q and k elements of RMS a and b, its deviation is a * b.
double scale_scores(const ModelConfig& cfg, WeightStore& w, int l) {
  const double off = cfg.norm_plus_one ? 1.0 : 0.0;
  if (cfg.qk_norm) {  // q and k leave their norms with the norm weights' RMS
    Tensor& qn = weight(w, layer_weight(l, "attn_q_norm.weight"));
    const Tensor& kn = weight(w, layer_weight(l, "attn_k_norm.weight"));
    const double s = kLargeScoreSigma / (rms(qn, 0, qn.numel(), off) * rms(kn, 0, kn.numel(), off));
    scale(qn, 0, qn.numel(), s, off);
    return s;
  }
  // Without QK-norm: q = Wq x with x of the attention norm's RMS, so a = rms(Wq) sqrt(D) rms(x).
  const Tensor& norm = weight(w, layer_weight(l, "attn_norm.weight"));
  const double x = rms(norm, 0, norm.numel(), off) * std::sqrt(double(cfg.hidden));
  const std::int64_t D = cfg.hidden, Q = std::int64_t(cfg.n_heads) * cfg.head_dim,
                     KV = std::int64_t(cfg.n_kv_heads) * cfg.head_dim;
  if (cfg.family == Family::gpt2) {  // the fused c_attn rows [q | k | v]
    Tensor& qkv = weight(w, layer_weight(l, "attn_qkv.weight"));
    const double s = kLargeScoreSigma / (rms(qkv, 0, Q * D, 0) * x * rms(qkv, Q * D, KV * D, 0) * x);
    scale(qkv, 0, Q * D, s);
    if (Tensor* b = w.find_mutable(layer_weight(l, "attn_qkv.bias"))) scale(*b, 0, Q, s);
    return s;
  }
  Tensor& wq = weight(w, layer_weight(l, "attn_q.weight"));
  const Tensor& wk = weight(w, layer_weight(l, "attn_k.weight"));
  const double s = kLargeScoreSigma / (rms(wq, 0, wq.numel(), 0) * x * rms(wk, 0, wk.numel(), 0) * x);
  scale(wq, 0, wq.numel(), s);
  if (Tensor* b = w.find_mutable(layer_weight(l, "attn_q.bias"))) scale(*b, 0, b->numel(), s);
  return s;
}

// Scales the q and k rows of one GDN layer's in-projection so that a head's sum of squares after
// the conv is near kTinyQkSumSquares. The conv and SiLU are linear near zero (silu(z) ~ z / 2): a
// channel's value is about rms(W row) sqrt(D) rms(x) times rms(conv taps) sqrt(K) / 2.
double shrink_gdn_qk(const ModelConfig& cfg, WeightStore& w, int l) {
  const double off = cfg.norm_plus_one ? 1.0 : 0.0;
  const Tensor& norm = weight(w, layer_weight(l, "attn_norm.weight"));
  const double x = rms(norm, 0, norm.numel(), off) * std::sqrt(double(cfg.hidden));
  Tensor& qkv = weight(w, layer_weight(l, "attn_qkv.weight"));
  const Tensor& conv = weight(w, layer_weight(l, "ssm_conv1d.weight"));
  const std::int64_t D = cfg.hidden, qk_rows = 2 * std::int64_t(cfg.gdn_key_dim()),
                     K = conv.dim(conv.rank() - 1);
  const double value =
      rms(qkv, 0, qk_rows * D, 0) * x * rms(conv, 0, qk_rows * K, 0) * std::sqrt(double(K)) / 2;
  const double target = std::sqrt(kTinyQkSumSquares / cfg.gdn_k_dim);
  const double s = value > 0 ? target / value : 1.0;
  scale(qkv, 0, qk_rows * D, s);
  return s;
}

bool is_gdn(BlockKind k) { return k == BlockKind::gdn; }
bool is_attention(BlockKind k) {
  return k == BlockKind::decoder || k == BlockKind::gpt2 || k == BlockKind::gated_attn;
}

// The layers a probe rewrites: what it aims at, in words, and the block kinds that have it.
struct ProbeTarget {
  std::string_view probe, blocks;
  bool (*has)(BlockKind);
};
constexpr ProbeTarget kTargets[] = {{"tiny-gdn-qk", "Gated DeltaNet layer", is_gdn},
                                    {"large-logits", "attention layer", is_attention}};

// Applies `scale_layer` to every layer whose block kind `wanted` accepts: how many, and the
// smallest and largest factor it used.
struct LayerScales {
  int layers = 0;
  double lo = 0, hi = 0;
};
template <typename Wanted, typename Scale>
LayerScales scale_layers(const ModelConfig& cfg, Wanted wanted, Scale scale_layer) {
  LayerScales r;
  for (int l = 0; l < cfg.n_layers; ++l) {
    if (!wanted(cfg.block_kind(l))) continue;
    const double s = scale_layer(l);
    r.lo = r.layers == 0 ? s : std::min(r.lo, s);
    r.hi = r.layers == 0 ? s : std::max(r.hi, s);
    ++r.layers;
  }
  return r;
}

}  // namespace

std::span<const Probe> probes() { return kProbes; }

const Probe& find_probe(std::string_view name) {
  std::string names;
  std::vector<std::string> known;
  for (const Probe& p : kProbes) {
    if (p.name == name) return p;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
    known.emplace_back(p.name);
  }
  throw InputError(fmt::format("--probe {}: no such probe{}; the probes are {} (or all)", name,
                               did_you_mean(name, known), names));
}

std::optional<std::string> probe_skip_reason(const Probe& probe, const ModelConfig& cfg) {
  for (const ProbeTarget& t : kTargets) {
    if (t.probe != probe.name) continue;
    std::vector<std::string> kinds;
    for (int l = 0; l < cfg.n_layers; ++l) {
      if (t.has(cfg.block_kind(l))) return std::nullopt;
      const std::string kind(block_kind_name(cfg.block_kind(l)));
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
    return fmt::format("{} has no {} for probe {} to aim at (its {} layer(s) run: {})", cfg.name, t.blocks,
                       probe.name, cfg.n_layers, fmt::join(kinds, ", "));
  }
  return std::nullopt;
}

void apply_probe_options(const Probe& probe, const ModelConfig& cfg, RunOptions& o) {
  if (!o.tokens.empty())
    throw InputError(fmt::format("--probe {} sets the prompt: leave out --tokens", probe.name));
  const int V = cfg.vocab;
  if (probe.name == "long-positions") {
    // The prompt and every decode step fit the context: a probe adapts to the model, never overruns it.
    o.decode_steps = std::max(o.decode_steps, 1);
    o.prompt_tokens =
        cfg.max_positions > 0 ? std::min(kLongPrompt, cfg.max_positions - o.decode_steps - 1) : kLongPrompt;
    o.from_step = 1;
    o.modes = {Mode::isolated};
  } else if (probe.name == "large-logits") {
    o.prompt_tokens = std::max(o.prompt_tokens, kLargeLogitsPrompt);
    // Isolated only: at score sigma 60 a softmax is nearly an argmax, so two correct chains (the
    // candidate's and the floor's) that differ by their rounding pick different near-tied keys
    // at some element, an O(|v|) difference no floor bounds. Isolated, both see the same inputs.
    o.modes = {Mode::isolated};
  } else if (probe.name == "repeated-tokens") {
    o.tokens.assign(std::size_t(std::max(o.prompt_tokens, 8)), seeded_prompt(1, V, o.seed).front());
  } else if (probe.name == "boundary-ids") {
    for (int i = 0; i < 8; ++i) o.tokens.push_back(i % 2 == 0 ? (i / 2) % 2 : V - 1 - (i / 2) % 2);
  } else if (probe.name == "odd-length") {
    o.prompt_tokens = kOddPrompt;
    o.decode_steps = std::max(o.decode_steps, 2);
  }
  if (!o.tokens.empty()) o.prompt_tokens = int(o.tokens.size());
}

std::string apply_probe_weights(const Probe& probe, ModelConfig& cfg, WeightStore& w,
                                const std::vector<int>& tokens) {
  if (probe.name == "tiny-rows" || probe.name == "huge-rows") {
    const double target = probe.name == "tiny-rows" ? kTinyRowRms : kHugeRowRms;
    // A tied lm_head is untied first (its own copy of the table): read through scaled rows, a huge
    // row's own logit would pass f16's range (the final norm's weights are large in real models),
    // a tiny row's would vanish; neither is what the probe is after.
    const bool untie = cfg.tied_embeddings;
    if (untie) {
      w.put("output.weight", weight(w, "token_embd.weight"));
      cfg.tied_embeddings = false;
    }
    Tensor& embd = weight(w, "token_embd.weight");
    std::vector<int> rows = tokens;
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    double lo = 0, hi = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::int64_t at = std::int64_t(rows[i]) * cfg.hidden;
      const double row = rms(embd, at, cfg.hidden, 0);
      const double s = row > 0 ? target / row : 1.0;
      scale(embd, at, cfg.hidden, s);
      lo = i == 0 ? s : std::min(lo, s);
      hi = i == 0 ? s : std::max(hi, s);
    }
    return fmt::format(
        "probe {}: embedding rows of the {} prompt token id(s) scaled to an RMS of {:g} (by {:.3g} to "
        "{:.3g}){}",
        probe.name, rows.size(), target, lo, hi,
        untie ? "; the tied lm_head untied, its rows as they were" : "");
  }
  if (probe.name == "tiny-gdn-qk") {
    const LayerScales r = scale_layers(cfg, is_gdn, [&](int l) { return shrink_gdn_qk(cfg, w, l); });
    return fmt::format(
        "probe {}: q/k rows of {} GDN layer(s) scaled by {:.3g} to {:.3g} (head sum of squares ~{:g})",
        probe.name, r.layers, r.lo, r.hi, kTinyQkSumSquares);
  }
  if (probe.name == "large-logits") {
    const LayerScales r = scale_layers(cfg, is_attention, [&](int l) { return scale_scores(cfg, w, l); });
    return fmt::format("probe {}: q of {} attention layer(s) scaled by {:.3g} to {:.3g} (score sigma ~{:g})",
                       probe.name, r.layers, r.lo, r.hi, kLargeScoreSigma);
  }
  return {};
}

}  // namespace ds
