// The Qwen3-Next steps of the cpu candidates (plans in cpu_candidate.cpp): the gated
// attention's q projection and output gate, and the Gated DeltaNet layer, in f32. The norms,
// rope, attention, residual adds and the MLP are the decoder's steps.
#include <fmt/format.h>

#include <cmath>

#include "cpu_batch.h"
#include "cpu_candidate.h"
#include "cpu_gdn_ops.h"
#include "mat_io.h"
#include "stage_catalog.h"

namespace ds::cpu {

bool CpuCandidate::run_hybrid(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                              TensorMap& outputs) {
  const ModelConfig& c = cfg_;
  const int l = ctx.layer;
  const std::string& s = step.name;
  auto x = [&](std::string_view n) { return to_mat(input(inputs, n, "cpu candidate")); };
  auto out = [&](std::string_view n, const Mat& m) { outputs[std::string(n)] = to_tensor(m, storage_); };

  if (s == "q_proj") {
    // q_proj's rows are [q | gate] per head: split each output row by head.
    const int d = c.head_dim;
    const Mat a = x("attn_norm"), qg = linear(a, w(l, "attn_q.weight"), b(l, "attn_q.bias"));
    Mat q(qg.rows, qg.cols / 2), gate(qg.rows, qg.cols / 2);
    for (std::int64_t t = 0; t < qg.rows; ++t)
      for (std::int64_t h = 0; h < c.n_heads; ++h)
        for (int i = 0; i < d; ++i) {
          q.row(t)[h * d + i] = qg.row(t)[h * 2 * d + i];
          gate.row(t)[h * d + i] = qg.row(t)[h * 2 * d + d + i];
        }
    out("q", q);
    out("attn_gate", gate);
    out("k", linear(a, w(l, "attn_k.weight"), b(l, "attn_k.bias")));
    out("v", linear(a, w(l, "attn_v.weight"), b(l, "attn_v.bias")));
  } else if (s == "attn_gate_mul") {
    out("attn_gated", sigmoid_mul(x("attn"), x("attn_gate")));
  } else if (s == "gdn_in_proj") {
    const Mat a = x("attn_norm");
    out("qkv_mixed", linear(a, w(l, "attn_qkv.weight"), {}));
    out("z_gate", linear(a, w(l, "attn_gate.weight"), {}));
    out("beta", gdn_beta(linear(a, w(l, "ssm_beta.weight"), {})));
    out("g", gdn_decay(linear(a, w(l, "ssm_alpha.weight"), {}), vec(l, "ssm_a"), vec(l, "ssm_dt.bias")));
  } else if (s == "conv") {
    // Per sequence, on its rows and its own conv state (cpu_batch.h).
    const Tensor& prev = input(inputs, "prev:conv_state", "cpu candidate");
    const Mat xs = x("qkv_mixed");
    const std::vector<SeqSpan> spans = seq_spans(ctx);
    std::vector<Mat> convs, states;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      Mat next;
      convs.push_back(conv_silu(row_range(xs, spans[i].row0, spans[i].n_tokens), w(l, "ssm_conv1d.weight").to_mat(),
                                state_part(prev, ctx, i), c.conv_state_rows(), next));
      states.push_back(std::move(next));
    }
    out("conv", stack_mats(convs));
    out("conv_state", stack_mats(states));
  } else if (s == "l2norm") {
    const Mat cv = x("conv");
    const int kd = c.gdn_key_dim(), dk = c.gdn_k_dim;
    const float eps = bug_ == PlantedBug::l2norm_no_eps ? 0.0f : 1e-6f;  // the planted bug: no epsilon
    out("q_l2", l2norm(columns(cv, 0, kd), dk, 1.0f / std::sqrt(float(dk)), eps));
    out("k_l2", l2norm(columns(cv, kd, kd), dk, 1.0f, eps));
  } else if (s == "gdn") {
    const Tensor& prev = input(inputs, "prev:gdn_state", "cpu candidate");
    const Mat v = columns(x("conv"), 2 * std::int64_t(c.gdn_key_dim()), c.gdn_value_dim());
    const Mat q = x("q_l2"), k = x("k_l2"), g = x("g"), beta = x("beta");
    const std::vector<SeqSpan> spans = seq_spans(ctx);
    std::vector<Mat> outs, states;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Mat p = state_part(prev, ctx, i);
      std::vector<float> state = p.rows == 0 ? std::vector<float>{} : gdn_state_from_stage(c, p);
      const auto rows = [&](const Mat& m) { return row_range(m, spans[i].row0, spans[i].n_tokens); };
      outs.push_back(gdn_recurrence(c, rows(q), rows(k), rows(v), rows(g), rows(beta), state));
      states.push_back(gdn_state_stage(c, state));
    }
    out("gdn_out", stack_mats(outs));
    out("gdn_state", stack_mats(states));
  } else if (s == "gated_norm") {
    out("gated_norm",
        gated_rmsnorm(x("gdn_out"), x("z_gate"), vec(l, "ssm_norm.weight"), float(c.norm_eps), c.gdn_v_dim));
  } else if (s == "out_proj") {
    out("out_proj", linear(x("gated_norm"), w(l, "ssm_out.weight"), {}));
  } else {
    return false;
  }
  return true;
}

}  // namespace ds::cpu
