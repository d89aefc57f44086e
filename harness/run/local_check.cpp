#include "local_check.h"

namespace ds {

bool local_check_runs(const RunOptions& opt, bool dump) {
  if (!opt.batch.empty() || opt.local_check == "off") return false;
  return opt.local_check == "on" || dump;
}

Numerics exact_sums(Numerics n) {
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
