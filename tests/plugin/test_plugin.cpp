// Plugins the plugin tests load, one source built once per PLUGIN_FLAVOUR (tests/plugin/CMakeLists.txt):
//   good       two partial RMSNorm candidates: "test-rmsnorm" (correct) and "test-rmsnorm-n1"
//              (mean over n - 1, a real bug class)
//   segv       "test-segv": segfaults in its step of layer 1
//   plan-segv  "test-plan-segv": segfaults when asked for its plan
//   bad-plan   "test-bad-plan": its plan produces "attn-norm", which is no stage
//   abi        declares the plugin ABI before this SDK's (a plugin built for the previous ABI)
//   no-entry   a shared library without the entry point
//   undefined  a plugin calling three functions nothing defines (two CUDA-family ones), as a kernel
//              file built without driftscope_add_simt_kernel's check links
#include <cmath>
#include <csignal>
#include <vector>

#include "plugin.h"

#if !defined(PLUGIN_FLAVOUR_NO_ENTRY)
namespace {

class TestRmsnorm final : public ds::Candidate {
 public:
  TestRmsnorm(std::string name, bool n_minus_1, bool segv_layer1, bool segv_plan, bool bad_plan)
      : name_(std::move(name)),
        n1_(n_minus_1),
        segv_(segv_layer1),
        segv_plan_(segv_plan),
        bad_plan_(bad_plan) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "test plugin: RMSNorm (attn_norm) in plain C++"; }
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }
  // Metadata the harness reads through the probe (plugin ABI 3): it takes decoder blocks batched,
  // in a batch-dependent order, and its (notional) MoE kernels serve at most top-4 of 64 experts.
  bool batches(ds::BlockKind kind) const override { return kind == ds::BlockKind::decoder; }
  bool batch_order_varies(ds::BlockKind kind) const override { return kind == ds::BlockKind::decoder; }
  ds::MoeLimits moe_limits() const override { return {4, 64}; }
  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind kind) const override {
    if (segv_plan_) std::raise(SIGSEGV);
    if (kind != ds::BlockKind::decoder) return {};
    return {{"rmsnorm", {"x"}, {bad_plan_ ? "attn-norm" : "attn_norm"}}};
  }
  void load(const ds::ModelConfig& cfg, const ds::WeightStore& weights) override {
    cfg_ = cfg;
    for (int l = 0; l < cfg.n_layers; ++l) w_.push_back(weights.layer(l, "attn_norm.weight"));
  }
  void run(const ds::KernelStep&, const ds::StepContext& ctx, const ds::TensorMap& inputs,
           ds::TensorMap& outputs) override {
    if (segv_ && ctx.layer == 1) std::raise(SIGSEGV);
    const ds::Tensor& x = inputs.at("x");
    const int T = ctx.n_tokens, C = cfg_.hidden;
    ds::Tensor y(ds::DType::f16, {T, C});
    for (int t = 0; t < T; ++t) {
      double ss = 0;
      for (int c = 0; c < C; ++c) ss += x.at(std::int64_t(t) * C + c) * x.at(std::int64_t(t) * C + c);
      const double inv = 1.0 / std::sqrt(ss / (n1_ ? C - 1 : C) + cfg_.norm_eps);
      for (int c = 0; c < C; ++c)
        y.set(std::int64_t(t) * C + c,
              x.at(std::int64_t(t) * C + c) * inv * w_[std::size_t(ctx.layer)].at(c));
    }
    outputs["attn_norm"] = std::move(y);
  }

 private:
  std::string name_;
  bool n1_, segv_, segv_plan_, bad_plan_;
  ds::ModelConfig cfg_;
  std::vector<ds::Tensor> w_;
};

}  // namespace
#endif

#if defined(PLUGIN_FLAVOUR_GOOD)
DRIFTSCOPE_PLUGIN("test-1.2.3",
                  {"test-rmsnorm",
                   []() -> ds::Candidate* {
                     return new TestRmsnorm("test-rmsnorm", false, false, false, false);
                   }},
                  {"test-rmsnorm-n1", []() -> ds::Candidate* {
                     return new TestRmsnorm("test-rmsnorm-n1", true, false, false, false);
                   }})
#elif defined(PLUGIN_FLAVOUR_SEGV)
DRIFTSCOPE_PLUGIN("test", {"test-segv", []() -> ds::Candidate* {
                             return new TestRmsnorm("test-segv", false, true, false, false);
                           }})
#elif defined(PLUGIN_FLAVOUR_PLAN_SEGV)
DRIFTSCOPE_PLUGIN("test", {"test-plan-segv", []() -> ds::Candidate* {
                             return new TestRmsnorm("test-plan-segv", false, false, true, false);
                           }})
#elif defined(PLUGIN_FLAVOUR_BAD_PLAN)
DRIFTSCOPE_PLUGIN("test", {"test-bad-plan", []() -> ds::Candidate* {
                             return new TestRmsnorm("test-bad-plan", false, false, false, true);
                           }})
#elif defined(PLUGIN_FLAVOUR_ABI)
extern "C" __attribute__((visibility("default"))) const ds_plugin* driftscope_plugin(void) {
  static const ds_plugin_candidate c[] = {{"test-abi", []() -> ds::Candidate* {
                                             return new TestRmsnorm("test-abi", false, false, false, false);
                                           }}};
  static const ds_plugin p = {DRIFTSCOPE_PLUGIN_ABI_VERSION - 1, "0.9.0", "test", 1, c};
  return &p;
}
#elif defined(PLUGIN_FLAVOUR_NO_ENTRY)
extern "C" int not_a_driftscope_plugin(void) { return 42; }
#elif defined(PLUGIN_FLAVOUR_UNDEFINED)
extern "C" int cudaGraphLaunch(void* graph, void* stream);
extern "C" int cublasSgemv_v2(void* handle, int trans);
extern "C" int helper_from_another_library(int x);
extern "C" __attribute__((visibility("default"))) int test_undefined_calls(int x) {
  return cudaGraphLaunch(nullptr, nullptr) + cublasSgemv_v2(nullptr, x) + helper_from_another_library(x);
}
DRIFTSCOPE_PLUGIN("test", {"test-undefined", []() -> ds::Candidate* {
                             return new TestRmsnorm("test-undefined", false, false, false, false);
                           }})
#endif
