#include "local_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

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

// Fits the candidate's scale against the honest step over each group of `width` adjacent columns
// of every row (bias.h, with the exact-sum step as the floor and the group's rows as its rows), and
// keeps in `l` the group that stands out most once the limit's rise for the number of groups is
// taken off (z^2 - 2 ln G orders groups as |z| against sqrt(k^2 + 2 ln G) does, for any k).
void fit_groups(const Tensor& h, const Tensor& c, const Tensor& a, std::int64_t width, double se_floor,
                LocalCheck& l) {
  const std::int64_t cols = h.rank() >= 1 ? h.dim(h.rank() - 1) : 0;
  if (width <= 0 || cols <= 0 || cols % width != 0 || cols / width < 2) return;
  const std::int64_t rows = h.numel() / cols, groups = cols / width;
  if (rows * width < kBiasMinElements) return;
  const double rise = 2 * std::log(double(groups));
  double best =
      l.group < 0 ? -INFINITY : std::pow(l.group_slope / l.group_se, 2) - 2 * std::log(double(l.groups));
  std::vector<double> hv(rows * width), cv(rows * width), av(rows * width);
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t j = 0; j < width; ++j) {
        const std::int64_t from = row * cols + g * width + j, to = row * width + j;
        hv[to] = h.at(from);
        cv[to] = c.at(from);
        av[to] = a.at(from);
      }
    const Shape shape{rows, width};
    const Tensor ht = Tensor::from_f64(shape, hv), ct = Tensor::from_f64(shape, cv),
                 at = Tensor::from_f64(shape, av);
    const TensorView floor = at.view();
    const BiasFit fit = fit_bias(ht.view(), ct.view(), &floor);
    if (!std::isfinite(fit.slope) || std::isnan(fit.se)) continue;
    const double se = std::fmax(fit.se, se_floor), z = fit.slope / se;
    if (z * z - rise <= best) continue;
    best = z * z - rise;
    l.group_slope = fit.slope;
    l.group_se = se;
    l.group = int(g);
    l.groups = int(groups);
    l.group_width = int(width);
  }
}

}  // namespace

LocalCheck measure_local(const Tensor& ref, const Tensor& cand, const Tensor& honest, const Tensor& alt,
                         DType storage, const Numerics& numerics, std::string_view stage, int head_width) {
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
  // A group's shared scale factor (a head's 1 / rms or 1 / sum) rounds where the numerics round the
  // stage, narrower than its storage where they do.
  const double group_floor = unit_roundoff(narrow ? *narrow : storage);
  fit_groups(h, cand, a, head_width, group_floor, l);
  fit_groups(h, cand, a, 1, group_floor, l);
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
