// f32 ops of Qwen3-Next for the cpu candidates (reference-math.md §1.5, §3), written as a
// float implementation would be: f32 accumulation, float libm, every config choice of the
// model (head map, state layout, conv state length) honoured. Independent of reference/.
#pragma once

#include <vector>

#include "cpu_ops.h"

namespace ds::cpu {

// y = a * sigmoid(g), element by element (the gated attention's output gate).
Mat sigmoid_mul(const Mat& a, const Mat& g);
// beta = sigmoid(b); g = a_neg * softplus(a + dt_bias), per value head (columns).
Mat gdn_beta(const Mat& b);
Mat gdn_decay(const Mat& a, std::span<const float> a_neg, std::span<const float> dt_bias);
// Causal depthwise conv + SiLU over x [T, C] with taps w [C, K] (tap K-1 on the current token),
// prepended by the conv state `prev` [S, C] (oldest row first; empty = zeros). `next` receives
// the last S rows of [prev | x], the state after this step.
Mat conv_silu(const Mat& x, const Mat& w, const Mat& prev, int state_rows, Mat& next);
// Per head of `width` columns: x / sqrt(sum(x^2) + eps) * scale.
Mat l2norm(const Mat& x, int width, float scale, float eps = 1e-6f);
// The gated delta rule over T tokens; `state` holds [nv, dk, dv] (S_h[i][j], key-major) and is
// updated in place. Value head h reads key head cfg.gdn_key_head(h).
Mat gdn_recurrence(const ModelConfig& cfg, const Mat& q, const Mat& k, const Mat& v, const Mat& g,
                   const Mat& beta, std::vector<float>& state);
// The gdn_state stage of `state` ([nv, dk, dv]) in cfg's layout, and back.
Mat gdn_state_stage(const ModelConfig& cfg, const std::vector<float>& state);
std::vector<float> gdn_state_from_stage(const ModelConfig& cfg, const Mat& stage);
// Per head of `width`: w * (o * rsqrt(mean(o^2) + eps)) * silu(z).
Mat gated_rmsnorm(const Mat& o, const Mat& z, std::span<const float> w, float eps, int width);

}  // namespace ds::cpu
