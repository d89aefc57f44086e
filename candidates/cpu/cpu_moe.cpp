// The mixture-of-experts steps of the cpu candidates (plan in cpu_candidate.cpp): the router
// projection, the routing rule's top-k and weights, and each token's experts combined, in f32
// with f16 stage outputs (docs/moe.md). Three planted variants break one rule each.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu_candidate.h"
#include "mat_io.h"

namespace ds::cpu {

namespace {

std::vector<float> softmax(std::span<const float> x) {
  const float m = *std::max_element(x.begin(), x.end());
  std::vector<float> p(x.size());
  float sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += p[i] = std::exp(x[i] - m);
  for (float& v : p) v /= sum;
  return p;
}

// The k largest, largest first, equal values lower index first (the oracle's documented order).
std::vector<int> top_k(std::span<const float> v, int k) {
  std::vector<int> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return v[std::size_t(a)] > v[std::size_t(b)]; });
  order.resize(std::size_t(k));
  return order;
}

// y = W x for one expert's [out, in] block of a stacked [experts, out * in] matrix.
std::vector<float> expert_matvec(const WeightMat& stack, int expert, std::int64_t out, std::span<const float> x,
                                 std::vector<float>& scratch) {
  std::vector<float> y(std::size_t(out), 0.0f);
  const float* w = stack.row(expert, scratch);
  const std::int64_t in = std::int64_t(x.size());
  for (std::int64_t o = 0; o < out; ++o) {
    float acc = 0;
    for (std::int64_t i = 0; i < in; ++i) acc += w[o * in + i] * x[std::size_t(i)];
    y[std::size_t(o)] = acc;
  }
  return y;
}

}  // namespace

std::vector<KernelStep> moe_steps(bool shared_expert) {
  std::vector<KernelStep> p = {{"ffn_norm", {"residual_1"}, {"ffn_norm"}},
                               {"router", {"ffn_norm"}, {"router_logits"}},
                               {"topk", {"router_logits"}, {"expert_ids", "expert_weights"}},
                               {"experts", {"ffn_norm", "expert_ids", "expert_weights"}, {"moe_out"}}};
  if (!shared_expert) {
    p.push_back({"residual_2", {"residual_1", "moe_out"}, {"residual_2"}});
    return p;
  }
  p.push_back({"shexp", {"ffn_norm"}, {"shexp_out"}});
  p.push_back({"shexp_gate", {"ffn_norm"}, {"shexp_gate"}});
  p.push_back({"shexp_add", {"moe_out", "shexp_gate", "shexp_out"}, {"ffn_out"}});
  p.push_back({"residual_2", {"residual_1", "ffn_out"}, {"residual_2"}});
  return p;
}

bool CpuCandidate::run_moe(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                           TensorMap& outputs) {
  const ModelConfig& c = cfg_;
  const int l = ctx.layer;
  const std::string& s = step.name;
  if (s == "shexp" || s == "shexp_gate" || s == "shexp_add")
    return run_shared_expert(step, ctx, inputs, outputs);
  if (s != "router" && s != "topk" && s != "experts") return false;
  auto x = [&](std::string_view n) { return to_mat(input(inputs, n, "cpu candidate")); };
  const std::int64_t E = c.n_experts, K = c.n_experts_used, D = c.hidden, F = c.expert_ffn;
  if (s == "router") {
    outputs["router_logits"] = to_tensor(linear(x("ffn_norm"), w(l, "ffn_gate_inp.weight"), {}), storage_);
    return true;
  }
  if (s == "topk") {
    const Mat logits = x("router_logits");
    Tensor ids(DType::f32, {logits.rows, K});
    Mat weights(logits.rows, K);
    MoeRouting rule = c.moe_routing;
    if (bug_ == PlantedBug::moe_rule_swapped)  // the planted bug: the other family's rule
      rule = rule == MoeRouting::softmax_topk ? MoeRouting::topk_softmax : MoeRouting::softmax_topk;
    for (std::int64_t t = 0; t < logits.rows; ++t) {
      const std::span<const float> row(logits.row(t), std::size_t(E));
      std::vector<float> wt;
      std::vector<int> chosen;
      if (rule == MoeRouting::softmax_topk) {
        const std::vector<float> p = softmax(row);
        chosen = top_k(p, int(K));
        float sum = 0;
        for (int e : chosen) sum += p[std::size_t(e)];
        const bool renorm = c.moe_norm_topk && bug_ != PlantedBug::moe_no_renorm;  // the planted bug
        for (int e : chosen) wt.push_back(renorm ? p[std::size_t(e)] / sum : p[std::size_t(e)]);
      } else {
        chosen = top_k(row, int(K));
        std::vector<float> v;
        for (int e : chosen) v.push_back(row[std::size_t(e)]);
        wt = softmax(v);
      }
      for (std::int64_t j = 0; j < K; ++j) {
        ids.set(t * K + j, chosen[std::size_t(j)]);
        weights.row(t)[j] = wt[std::size_t(j)];
      }
    }
    outputs["expert_ids"] = ids;
    outputs["expert_weights"] = to_tensor(weights, storage_);
    return true;
  }
  // experts: each token's k experts, combined in f32 in slot order.
  const Mat a = x("ffn_norm"), weights = x("expert_weights");
  const Tensor& ids = input(inputs, "expert_ids", "cpu candidate");
  const WeightMat &gate = w(l, "ffn_gate_exps.weight"), &up = w(l, "ffn_up_exps.weight"),
                  &down = w(l, "ffn_down_exps.weight");
  std::vector<float> scratch;
  Mat out(a.rows, D);
  for (std::int64_t t = 0; t < a.rows; ++t) {
    const std::span<const float> xt(a.row(t), std::size_t(D));
    for (std::int64_t j = 0; j < K; ++j) {
      int e = int(ids.at(t * K + j));
      if (e < 0 || e >= E) throw std::out_of_range(fmt::format("cpu candidate: expert id {} of {}", e, E));
      if (bug_ == PlantedBug::moe_expert_off_by_one) e = int((e + 1) % E);  // the planted bug
      const std::vector<float> g = expert_matvec(gate, e, F, xt, scratch), u = expert_matvec(up, e, F, xt, scratch);
      std::vector<float> act(std::size_t(F), 0.0f);
      for (std::int64_t f = 0; f < F; ++f) {
        const float gf = g[std::size_t(f)];
        act[std::size_t(f)] = gf / (1.0f + std::exp(-gf)) * u[std::size_t(f)];
      }
      const std::vector<float> y = expert_matvec(down, e, D, act, scratch);
      for (std::int64_t d = 0; d < D; ++d) out.row(t)[d] += weights.row(t)[j] * y[std::size_t(d)];
    }
  }
  outputs["moe_out"] = to_tensor(out, storage_);
  return true;
}

// Qwen3-Next's shared expert: a SwiGLU MLP of ffn_norm, its gate sigmoid(ffn_norm . w) [T, 1],
// and the routed output plus the gated shared one, in f32.
bool CpuCandidate::run_shared_expert(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                                     TensorMap& outputs) {
  const int l = ctx.layer;
  auto x = [&](std::string_view n) { return to_mat(input(inputs, n, "cpu candidate")); };
  if (step.name == "shexp") {
    const Mat a = x("ffn_norm");
    const Mat act =
        silu_mul(linear(a, w(l, "ffn_gate_shexp.weight"), {}), linear(a, w(l, "ffn_up_shexp.weight"), {}));
    outputs["shexp_out"] = to_tensor(linear(act, w(l, "ffn_down_shexp.weight"), {}), storage_);
  } else if (step.name == "shexp_gate") {
    Mat g = linear(x("ffn_norm"), w(l, "ffn_gate_inp_shexp.weight"), {});
    if (bug_ != PlantedBug::moe_shexp_gate_raw)  // the planted bug: the logit as the gate
      for (float& v : g.v) v = 1.0f / (1.0f + std::exp(-v));
    outputs["shexp_gate"] = to_tensor(g, storage_);
  } else {
    const Mat moe = x("moe_out"), gate = x("shexp_gate"), sh = x("shexp_out");
    Mat out(moe.rows, moe.cols);
    for (std::int64_t t = 0; t < moe.rows; ++t) {
      const float g = bug_ == PlantedBug::moe_shexp_gate_dropped ? 1.0f : gate.row(t)[0];  // the planted bug
      for (std::int64_t d = 0; d < moe.cols; ++d) out.row(t)[d] = moe.row(t)[d] + g * sh.row(t)[d];
    }
    outputs["ffn_out"] = to_tensor(out, storage_);
  }
  return true;
}

}  // namespace ds::cpu
