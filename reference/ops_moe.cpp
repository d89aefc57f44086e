// Mixture-of-experts routing (docs/moe.md): the two rules real checkpoints use, in double.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "ops.h"

namespace ds::ref {

namespace {

// softmax of `x`, max-subtracted.
std::vector<double> softmax(std::span<const double> x) {
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> p(x.size());
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp(x[i] - m);
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

std::vector<int> top_k(std::span<const double> values, int k) {
  if (k <= 0 || std::size_t(k) > values.size())
    throw std::invalid_argument(fmt::format("top_k: k = {} of {} values", k, values.size()));
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  // A stable sort by value keeps equal values in index order: the tie rule torch.topk and
  // ggml's argsort leave unspecified, fixed here so the oracle is one function (docs/moe.md).
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return values[std::size_t(a)] > values[std::size_t(b)]; });
  order.resize(std::size_t(k));
  return order;
}

std::vector<double> routing_weights(std::span<const double> logits, std::span<const int> ids, MoeRouting rule,
                                    bool norm_topk) {
  for (int e : ids)
    if (e < 0 || std::size_t(e) >= logits.size())
      throw std::invalid_argument(fmt::format("routing_weights: expert {} of {}", e, logits.size()));
  std::vector<double> w;
  if (rule == MoeRouting::softmax_topk) {
    const std::vector<double> p = softmax(logits);
    double sum = 0;
    for (int e : ids) sum += p[std::size_t(e)];
    for (int e : ids) w.push_back(norm_topk ? p[std::size_t(e)] / sum : p[std::size_t(e)]);
  } else {
    std::vector<double> chosen;
    for (int e : ids) chosen.push_back(logits[std::size_t(e)]);
    w = softmax(chosen);
  }
  return w;
}

ExpertChoice route_experts(std::span<const double> logits, int n_used, MoeRouting rule, bool norm_topk) {
  ExpertChoice c;
  // As each source ranks: softmax_topk the probabilities (HF's topk over softmax), topk_softmax
  // the logits. The same order but where two logits round to one probability.
  c.ids = rule == MoeRouting::softmax_topk ? top_k(softmax(logits), n_used) : top_k(logits, n_used);
  c.weights = routing_weights(logits, c.ids, rule, norm_topk);
  return c;
}

}  // namespace ds::ref
