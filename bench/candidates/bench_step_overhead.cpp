// What one candidate step costs across the process boundary (issue 52, "Performance"): the same
// stage (attn_norm of one layer, f16 storage, hidden 896 as qwen2.5-0.5b) served by a C++ plugin
// (tests/plugin's test-rmsnorm) and by a Python candidate in numpy (py_attn_norm.py), each in the
// candidate child process a run uses (ChildCandidate). The plugin is the baseline, measured in the
// same run; the Python figure adds its second pipe hop and the numpy conversion. Target: <= 2x.
//
//   bench_step_overhead PLUGIN.so PY_FILE.py [--calls N]
//
// Needs DRIFTSCOPE_PYTHON_SDK (the checkout's python/) and DRIFTSCOPE_PYTHON (a Python with numpy).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "child_candidate.h"
#include "registry.h"

namespace {

struct Timing {
  double us_per_call = 0;
};

double time_calls(ds::Candidate& cand, const ds::ModelConfig& cfg, int rows, int calls) {
  const ds::KernelStep step{"rmsnorm", {"x"}, {"attn_norm"}};
  ds::Tensor x(ds::DType::f16, {rows, cfg.hidden});
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, 0.01 * double(i % 97) - 0.4);
  const ds::TensorMap inputs{{"x", x}};
  const ds::StepContext ctx{&cfg, 0, 0, 0, rows, {}};
  ds::TensorMap warm;
  cand.run(step, ctx, inputs, warm);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    ds::TensorMap out;
    cand.run(step, ctx, inputs, out);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: bench_step_overhead PLUGIN.so PY_FILE.py [--calls N]\n");
    return 2;
  }
  const int calls = argc >= 5 && std::string(argv[3]) == "--calls" ? std::atoi(argv[4]) : 300;
  ds::ModelConfig cfg;
  cfg.name = "bench:qwen2.5-0.5b-width";
  cfg.family = ds::Family::qwen2;
  cfg.n_layers = 1;
  cfg.hidden = 896;
  cfg.n_heads = 14;
  cfg.n_kv_heads = 2;
  cfg.head_dim = 64;
  cfg.ffn = 4864;
  cfg.vocab = 151936;
  cfg.layer_kinds = {ds::BlockKind::decoder};
  ds::WeightStore weights;
  ds::Tensor w(ds::DType::f32, {cfg.hidden});
  for (std::int64_t i = 0; i < w.numel(); ++i) w.set(i, 1.0 + 0.001 * double(i % 13));
  weights.put(ds::layer_weight(0, "attn_norm.weight"), w);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"C++ plugin (baseline)", std::string(argv[1]) + ":test-rmsnorm"},
      {"Python (numpy)", std::string("py:") + argv[2] + ":py-attn-norm"}};
  std::vector<std::vector<double>> us(cases.size());
  const std::vector<int> row_counts = {1, 16, 128};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    ds::ChildCandidate cand(ds::make_candidate(cases[c].second), 60);
    cand.load(cfg, weights);
    for (int rows : row_counts) us[c].push_back(time_calls(cand, cfg, rows, calls));
  }
  fmt::print("one attn_norm step, hidden {}, f16, through the candidate process; {} calls each\n", cfg.hidden,
             calls);
  fmt::print("{:<24}", "rows");
  for (int rows : row_counts) fmt::print("{:>16}", rows);
  fmt::print("\n");
  for (std::size_t c = 0; c < cases.size(); ++c) {
    fmt::print("{:<24}", cases[c].first);
    for (std::size_t r = 0; r < row_counts.size(); ++r)
      fmt::print("{:>16}", c == 0 ? fmt::format("{:.1f} us", us[c][r])
                                  : fmt::format("{:.1f} us {:.2f}x", us[c][r], us[c][r] / us[0][r]));
    fmt::print("\n");
  }
  return 0;
}
