#include "local_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "bias.h"
#include "metrics.h"
#include "policy.h"

namespace ds {

namespace {

// The narrowest rounding the numerics put in a stage's own computation, where narrower than its
// storage: an f16 GELU table, flash attention's f16 accumulator, an f16 or bf16 KV cache. The two
// honest engines round there alike, but an engine whose arithmetic before that rounding differs by
// one f32 ULP (a fused multiply-add, another exp) lands one ULP of that dtype away on some elements.
std::optional<DType> narrow_rounding(const Numerics& n, std::string_view stage) {
  if (stage == "gelu" && n.gelu == Numerics::Gelu::f16_table) return DType::f16;
  if (stage == "attn" && n.attention == Numerics::Attention::f16_flash) return DType::f16;
  if (stage == "attn" && n.kv_cache && *n.kv_cache != DType::f32) return n.kv_cache;
  return std::nullopt;
}

}  // namespace

LocalCheck measure_local(const Tensor& ref, const Tensor& cand, const Tensor& honest, const Tensor& alt,
                         DType storage, const Numerics& numerics, std::string_view stage) {
  const std::optional<DType> narrow = narrow_rounding(numerics, stage);
  LocalCheck l;
  const Tensor h = honest.reshaped(ref.shape()), a = alt.reshaped(ref.shape());
  const Metrics own = compute_metrics(h.view(), cand.view(), storage, {});
  const Metrics noise = compute_metrics(h.view(), a.view(), storage, {});
  const Metrics carried = compute_metrics(ref.view(), h.view(), storage, {});
  l.max_abs = own.max_abs;
  l.rms = own.rms;
  l.noise_max_abs = noise.max_abs;
  l.noise_rms = noise.rms;
  l.scale = 0;
  for (std::int64_t i = 0; i < h.numel(); ++i)
    if (std::isfinite(h.at(i))) l.scale = std::max(l.scale, std::fabs(h.at(i)));
  if (narrow) {
    l.noise_max_abs = std::fmax(l.noise_max_abs, unit_roundoff(*narrow) * l.scale);
    l.noise_rms = std::fmax(l.noise_rms, unit_roundoff(*narrow) * rms(h.view()));
  }
  l.carried_max_abs = carried.max_abs;
  l.carried_rms = carried.rms;
  const TensorView av = a.view();
  const BiasFit bias = fit_bias(h.view(), cand.view(), &av);
  l.bias_slope = bias.slope;
  // A correct engine rounds the scale factors its rows or heads share (a norm's 1 / rms, a softmax's
  // 1 / sum, a GDN head's decay exp(g)) its own way: a whole row or head may be scaled by about one
  // half-ULP of the storage dtype, which no difference between the two honest engines shows, and
  // a few such groups make the stage's slope that large by chance. The standard error is not taken
  // below it.
  l.bias_se = std::fmax(bias.se, unit_roundoff(storage));
  return l;
}

bool local_check_runs(const RunOptions& opt, bool dump) {
  if (!opt.batch.empty() || opt.local_check == "off") return false;
  return opt.local_check == "on" || dump;
}

Numerics with_exact_sums(Numerics n) {
  n.accum = Numerics::Accum::exact;
  return n;
}

void HonestEngines::recompute(int layer, int pos0, const Tensor& x, const TensorMap& produced,
                              const std::set<std::string, std::less<>>& filled, const TensorMap& shapes,
                              TensorMap& honest, TensorMap& alt) {
  TensorMap given;
  for (const auto& [name, t] : produced) {
    if (filled.count(name)) continue;
    auto s = shapes.find(name);
    if (s == shapes.end() || s->second.numel() != t.numel()) continue;
    given[name] = t.to(DType::f64).reshaped(s->second.shape());
  }
  const Tensor in = x.to(DType::f64);
  if (layer < 0) {
    honest = f32_sums->head(in, &given);
    alt = exact_sums->head(in, &given);
    return;
  }
  honest = f32_sums->layer(layer, in, pos0, &given);
  alt = exact_sums->layer(layer, in, pos0, &given);
  f32_sums->adopt_state(layer, given);
  exact_sums->adopt_state(layer, given);
}

}  // namespace ds
