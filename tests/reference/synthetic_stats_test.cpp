// Every synthetic preset must look like a real checkpoint of its family where kernel bugs hide
// (docs/synthetic-models.md): embeddings near 0.02, a residual stream that the first layer lifts
// well above the embedding and that grows with depth, massive activations in a few channels of
// the sink token, attention logits of a real model's range and next-token distributions with a
// realistic spread. This test runs the reference over a prompt that starts with the sink token and
// measures each of those on every preset, at full depth.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "reference.h"
#include "synthetic.h"

namespace ds::ref {
namespace {

constexpr int kTokens = 12;

struct Stats {
  double embed_rms = 0;
  std::vector<double> residual_rms;  // per layer, rows after the sink
  double massive_over_median = 0;    // at mid depth: the sink row's largest |x| over the median |x|
  int massive_channels = 0;          // channels of the sink row above 100x that median
  double logit_std = 0;              // attention logits, every causal pair of every head
  double logit_max = 0;
  double top1_median = 0;  // next-token top-1 probability, rows after the sink
};

double rms_rows(const Tensor& t, std::int64_t from_row) {
  const std::int64_t W = t.dim(1);
  double ss = 0;
  for (std::int64_t i = from_row * W; i < t.numel(); ++i) ss += t.at(i) * t.at(i);
  return std::sqrt(ss / double(t.numel() - from_row * W));
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Scaled q.k of every causal pair of every head; q and k given as [T, heads * head_dim] with
// their own row strides (GPT-2 reads both out of one qkv row).
void attention_logits(const Tensor& q, std::int64_t q_at, std::int64_t q_stride, const Tensor& k,
                      std::int64_t k_at, std::int64_t k_stride, const ModelConfig& c,
                      std::vector<double>& out) {
  const std::int64_t T = q.dim(0), hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  for (std::int64_t h = 0; h < c.n_heads; ++h)
    for (std::int64_t i = 1; i < T; ++i)
      for (std::int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::int64_t d = 0; d < hd; ++d)
          dot += q.at(i * q_stride + q_at + h * hd + d) * k.at(j * k_stride + k_at + (h / group) * hd + d);
        out.push_back(dot / std::sqrt(double(hd)));
      }
}

Stats measure(const std::string& preset) {
  const auto model = std::make_shared<const Model>(make_synthetic(preset, 0));
  const ModelConfig& c = model->config;
  const SyntheticScales scales = synthetic_scales(c);
  std::vector<std::int32_t> prompt = {kSinkToken};
  for (int i = 1; i < kTokens; ++i) prompt.push_back(std::int32_t((i * 7919 + 13) % c.vocab));
  Reference ref(model);
  Stats s;
  Tensor x = ref.embed(prompt, 0).at("embed");
  s.embed_rms = rms_rows(x, 1);
  std::vector<double> scores;
  for (int l = 0; l < c.n_layers; ++l) {
    const TensorMap st = ref.layer(l, x, 0);
    x = st.at("residual_2");
    s.residual_rms.push_back(rms_rows(x, 1));
    if (st.count("q_rope"))
      attention_logits(st.at("q_rope"), 0, st.at("q_rope").dim(1), st.at("k_rope"), 0, st.at("k_rope").dim(1),
                       c, scores);
    else if (st.count("qkv"))
      attention_logits(st.at("qkv"), 0, 3 * c.hidden, st.at("qkv"), c.hidden, 3 * c.hidden, c, scores);
    if (l == c.n_layers / 2) {
      std::vector<double> mags;
      for (std::int64_t i = 0; i < x.numel(); ++i) mags.push_back(std::abs(x.at(i)));
      const double med = median(mags);
      double top = 0;
      for (std::int64_t d = 0; d < c.hidden; ++d) {
        top = std::max(top, std::abs(x.at(d)));
        s.massive_channels += std::abs(x.at(d)) > 100 * med;
      }
      s.massive_over_median = top / med;
    }
  }
  if (!scores.empty()) {
    double sum = 0, ss = 0;
    for (double v : scores) {
      sum += v;
      ss += v * v;
      s.logit_max = std::max(s.logit_max, std::abs(v));
    }
    const double mean = sum / double(scores.size());
    s.logit_std = std::sqrt(ss / double(scores.size()) - mean * mean);
  }
  const Tensor logits = ref.head(x).at("logits");
  std::vector<double> top1;
  for (std::int64_t t = 1; t < logits.dim(0); ++t) {
    double mx = -1e300, z = 0;
    for (std::int64_t v = 0; v < c.vocab; ++v) mx = std::max(mx, logits.at(t * c.vocab + v));
    for (std::int64_t v = 0; v < c.vocab; ++v) z += std::exp(logits.at(t * c.vocab + v) - mx);
    top1.push_back(1.0 / z);
  }
  s.top1_median = median(top1);
  return s;
}

class SyntheticStats : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticStats, LookLikeARealCheckpoint) {
  const Stats s = measure(GetParam());
  std::string profile = fmt::format("embed rms {:.4f}; residual rms by layer", s.embed_rms);
  for (double r : s.residual_rms) profile += fmt::format(" {:.3f}", r);
  profile += fmt::format(
      "; sink's largest |x| {:.0f}x the median in {} channels; attention logits std {:.2f} max {:.1f}; "
      "median top-1 {:.3f}",
      s.massive_over_median, s.massive_channels, s.logit_std, s.logit_max, s.top1_median);
  SCOPED_TRACE(profile);
  fmt::print("{}: {}\n", GetParam(), profile);
  // Real embeddings sit near 0.01-0.05.
  EXPECT_GE(s.embed_rms, 0.01);
  EXPECT_LE(s.embed_rms, 0.05);
  // The first layer's writes swamp the embedding (else a tied head sees the token's own row).
  EXPECT_GE(s.residual_rms.front(), 5 * s.embed_rms);
  // Exponential growth over depth: a few percent to a few tens of percent a layer.
  if (s.residual_rms.size() >= 2) {
    const double per_layer =
        std::pow(s.residual_rms.back() / s.residual_rms.front(), 1.0 / double(s.residual_rms.size() - 1));
    EXPECT_GE(per_layer, 1.02);
    EXPECT_LE(per_layer, 1.3);
  }
  // Massive activations: hundreds to thousands of times the median, in a few channels.
  EXPECT_GE(s.massive_over_median, 300);
  EXPECT_GE(s.massive_channels, 1);
  EXPECT_LE(s.massive_channels, 4);
  // Attention logits of a trained model's range: spread of a few units, peaks of 5 and more.
  if (s.logit_std > 0) {
    EXPECT_GE(s.logit_std, 0.8);
    EXPECT_LE(s.logit_std, 6);
    EXPECT_GE(s.logit_max, 4);
    EXPECT_LE(s.logit_max, 60);
  }
  // Next-token distributions neither flat nor one-hot.
  EXPECT_GE(s.top1_median, 0.1);
  EXPECT_LE(s.top1_median, 0.9);
}

// Every preset at full depth, but the real-shape MoE ones and the 8B class (hidden 4096): Qwen3-30B-A3B
// is 60 GB of bf16 weights, Qwen3-8B 16 GB; their smaller relatives measure the same generator.
std::vector<std::string> measured_presets() {
  std::vector<std::string> out;
  for (const std::string& p : synthetic_presets()) {
    const ModelConfig c = synthetic_config(p);
    if (!(c.moe() && c.hidden > 1024) && c.hidden < 4096) out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryPreset, SyntheticStats, ::testing::ValuesIn(measured_presets()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace ds::ref
