// Cost of running a kernel through the SIMT CPU runtime, as a ratio to a plain
// C++ loop computing the same result, both timed in the same process. The third argument is the
// runtime's host threads: 1 compares one core with one core (the figure docs/simt.md tracks), 0 is
// the runtime's default (every core) against the same one-core loop.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "test_kernels.h"

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Same arithmetic order per row as one warp would need is not the point here:
// this is the straightforward loop a CPU reference would use.
__attribute__((noinline)) void plain_gemv(const float* W, const float* x, float* y, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const float* w = W + static_cast<std::size_t>(r) * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += w[c] * x[c];
    y[r] = acc;
  }
}

double best_plain_seconds(const std::vector<float>& W, const std::vector<float>& x, std::vector<float>& y,
                          int rows, int cols) {
  double best = 1e30;
  for (int rep = 0; rep < 15; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    plain_gemv(W.data(), x.data(), y.data(), rows, cols);
    benchmark::ClobberMemory();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

void GemvVsPlainLoop(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const int cols = static_cast<int>(state.range(1));
  simt::Config cfg;
  cfg.host_threads = static_cast<unsigned>(state.range(2));
  const auto W = random_floats(static_cast<std::size_t>(rows) * cols, 1);
  const auto x = random_floats(cols, 2);
  std::vector<float> y(rows);
  simt::DeviceBuffer<float> dW(W), dx(x), dy(rows);
  simt::set_config(cfg);
  simt_test::gemv(dW.data(), dx.data(), dy.data(), rows, cols);  // warm the fiber pool

  double best = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    simt_test::gemv(dW.data(), dx.data(), dy.data(), rows, cols);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  // Best-of on both sides: the machine is shared, and the minimum is the
  // least noisy estimate of each.
  const double plain = best_plain_seconds(W, x, y, rows, cols);
  state.counters["plain_ms"] = plain * 1e3;
  state.counters["simt_best_ms"] = best * 1e3;
  state.counters["ratio"] = best / plain;
  state.counters["ns_per_cuda_thread"] = best * 1e9 / (static_cast<double>(rows) * 32);
}

BENCHMARK(GemvVsPlainLoop)
    ->ArgNames({"rows", "cols", "host_threads"})
    ->Args({4864, 896, 1})
    ->Args({896, 896, 1})
    ->Args({37, 100, 1})
    ->Args({4864, 896, 0})
    ->Args({896, 896, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
