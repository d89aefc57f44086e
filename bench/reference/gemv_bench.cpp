// Decode-step projections (GEMV, one token) of the oracle on qwen2.5-0.5b shapes. A GEMV reads
// every weight once, so it is memory bound: each case also times a plain sum over the same
// bytes, split over the same threads, and reports achieved bytes/s as a fraction of that
// baseline (counter `of_sum_bw`). Weights are f64 (Arg 1: f32, as the Reference holds an f32
// checkpoint's matrices since issue 17; bf16 and f16 rows are widened to f64 first).
#include <benchmark/benchmark.h>

#include <chrono>

#include "ops.h"
#include "parallel.h"
#include "synthetic.h"

namespace {

struct Proj {
  const char* name;
  std::int64_t out, in;
};
// qwen2.5-0.5b: hidden 896, 14 heads x 64, 2 KV heads, ffn 4864.
constexpr Proj kProj[] = {{"q", 896, 896},     {"k", 128, 896},   {"v", 128, 896},    {"o", 896, 896},
                          {"gate", 4864, 896}, {"up", 4864, 896}, {"down", 896, 4864}};

ds::Tensor random(ds::Shape s, ds::DType t) {
  ds::Tensor x(ds::DType::f64, std::move(s));
  ds::ref::NormalStream rng(7, "bench");
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data<double>()[i] = 0.02 * rng.next();
  return x.to(t);
}

// Best-of-5 seconds to sum `bytes` of `w` with the linear op's thread split.
double sum_seconds(const ds::Tensor& w) {
  double best = 1e9;
  const auto n = std::int64_t(w.nbytes() / 8);
  const auto* p = reinterpret_cast<const std::uint64_t*>(w.raw());
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    ds::ref::parallel_for(w.dim(0), w.numel(), [&](std::int64_t b, std::int64_t e) {
      std::uint64_t s = 0;
      const std::int64_t per_row = n / w.dim(0);
      for (std::int64_t i = b * per_row; i < e * per_row; ++i) s += p[i];
      benchmark::DoNotOptimize(s);
    });
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void report(benchmark::State& state, double bytes, double seconds_per_iter, double baseline_seconds) {
  state.counters["bytes_per_s"] = benchmark::Counter(bytes / seconds_per_iter);
  state.counters["sum_bytes_per_s"] = benchmark::Counter(bytes / baseline_seconds);
  state.counters["of_sum_bw"] = benchmark::Counter(baseline_seconds / seconds_per_iter);
}

void BM_DecodeProjection(benchmark::State& state) {
  const Proj& p = kProj[state.range(0)];
  const ds::DType t = state.range(1) ? ds::DType::f32 : ds::DType::f64;
  const ds::Tensor w = random({p.out, p.in}, t);
  const ds::Tensor x = random({1, p.in}, ds::DType::f64);
  const double baseline = sum_seconds(w);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(ds::ref::linear(x, w, nullptr));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.SetLabel(p.name);
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(w.nbytes()));
  report(state, double(w.nbytes()), seconds / double(state.iterations()), baseline);
}

void BM_DecodeStepAllProjections(benchmark::State& state) {
  std::vector<ds::Tensor> ws, xs;
  std::size_t bytes = 0;
  for (const auto& p : kProj) {
    ws.push_back(random({p.out, p.in}, ds::DType::f64));
    xs.push_back(random({1, p.in}, ds::DType::f64));
    bytes += ws.back().nbytes();
  }
  double baseline = 0;
  for (const auto& w : ws) baseline += sum_seconds(w);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < ws.size(); ++i)
      benchmark::DoNotOptimize(ds::ref::linear(xs[i], ws[i], nullptr));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
  report(state, double(bytes), seconds / double(state.iterations()), baseline);
}

BENCHMARK(BM_DecodeProjection)
    ->ArgsProduct({benchmark::CreateDenseRange(0, 6, 1), {0, 1}})
    ->ArgNames({"proj", "f32"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeStepAllProjections)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
