// The planted table of `driftscope verify` (tests/verify/test_verify_planted.py): candidates for the
// RMSNorm stages (attn_norm, ffn_norm) of a decoder, the other stages filled by the reference. One
// is correct; each other carries one bug or one cheat from the public write-ups of kernels that
// passed automated benchmarks (docs/verify.md), and verify must name it with its kind and stage.
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "planted.h"
#include "plugin.h"

namespace {

// What a candidate does besides (or instead of) its kernel.
enum class Cheat { none, cached_output, returns_input, constant_output };

std::vector<float> to_f32(const ds::Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
  return v;
}

class PlantedCandidate final : public ds::Candidate {
 public:
  PlantedCandidate(std::string name, PlantedKernel kernel, Cheat cheat)
      : name_(std::move(name)), kernel_(kernel), cheat_(cheat) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "verify's planted table: RMSNorm, " + name_; }
  ds::DType storage_dtype() const override { return ds::DType::f32; }
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }

  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (kind != ds::BlockKind::decoder) return {};
    return {{"rmsnorm_attn", {"x"}, {"attn_norm"}}, {"rmsnorm_ffn", {"residual_1"}, {"ffn_norm"}}};
  }

  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) {
      attn_w_.push_back(to_f32(weights.layer(l, "attn_norm.weight")));
      ffn_w_.push_back(to_f32(weights.layer(l, "ffn_norm.weight")));
    }
    scratch_ = std::make_unique<PlantedScratch>(kMaxRows);
  }

  void run(const ds::KernelStep& step, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    const bool attn = step.name == "rmsnorm_attn";
    const ds::Tensor& in = inputs.at(attn ? "x" : "residual_1");
    const int rows = ctx.n_tokens, cols = cfg_.hidden;
    if (rows > kMaxRows) throw std::runtime_error(name_ + ": more rows than the planted scratch holds");
    if (cheat_ == Cheat::returns_input && attn) {
      outputs[step.outputs[0]] = in;  // the stage's input handed back as its output
      return;
    }
    // KernelBench-style caching: the first output of each step at each shape, kept for later calls.
    const std::pair<std::string, int> key{step.name, rows};
    if (cheat_ == Cheat::cached_output) {
      if (auto it = cache_.find(key); it != cache_.end()) {
        outputs[step.outputs[0]] = it->second;
        return;
      }
    }
    const auto& w = (attn ? attn_w_ : ffn_w_)[static_cast<std::size_t>(ctx.layer)];
    std::vector<float> x = to_f32(in);
    if (cheat_ == Cheat::constant_output) x.assign(x.size(), 1.0f);  // the input never read
    std::vector<float> y(x.size());
    planted_rmsnorm(kernel_, y.data(), x.data(), w.data(), rows, cols, static_cast<float>(cfg_.norm_eps),
                    *scratch_);
    ds::Tensor out(storage_dtype(), {rows, cols});
    for (std::size_t i = 0; i < y.size(); ++i) out.set(static_cast<std::int64_t>(i), y[i]);
    if (cheat_ == Cheat::cached_output) cache_[key] = out;
    outputs[step.outputs[0]] = std::move(out);
  }

 private:
  static constexpr int kMaxRows = 256;
  std::string name_;
  PlantedKernel kernel_;
  Cheat cheat_;
  ds::ModelConfig cfg_;
  std::vector<std::vector<float>> attn_w_, ffn_w_;
  std::unique_ptr<PlantedScratch> scratch_;
  std::map<std::pair<std::string, int>, ds::Tensor> cache_;
};

template <PlantedKernel K, Cheat C>
ds::Candidate* make_planted(const char* name) {
  return new PlantedCandidate(name, K, C);
}

}  // namespace

#define PLANTED(NAME, KERNEL, CHEAT)                                           \
  {                                                                            \
    NAME, []() -> ds::Candidate* { return make_planted<KERNEL, CHEAT>(NAME); } \
  }

DRIFTSCOPE_PLUGIN("1.0.0", PLANTED("planted-correct", PlantedKernel::correct, Cheat::none),
                  PLANTED("planted-uninit-shared", PlantedKernel::uninit_shared, Cheat::none),
                  PLANTED("planted-uninit-static-shared", PlantedKernel::uninit_static_shared, Cheat::none),
                  PLANTED("planted-stale-global", PlantedKernel::stale_global, Cheat::none),
                  PLANTED("planted-uninit-local", PlantedKernel::uninit_local, Cheat::none),
                  PLANTED("planted-lost-update", PlantedKernel::lost_update, Cheat::none),
                  PLANTED("planted-split-past-2048", PlantedKernel::split_past_2048, Cheat::none),
                  PLANTED("planted-static-shared-race", PlantedKernel::static_shared_race, Cheat::none),
                  PLANTED("planted-half-compute", PlantedKernel::half_compute, Cheat::none),
                  PLANTED("planted-cached-output", PlantedKernel::correct, Cheat::cached_output),
                  PLANTED("planted-returns-input", PlantedKernel::correct, Cheat::returns_input),
                  PLANTED("planted-constant-output", PlantedKernel::correct, Cheat::constant_output))
