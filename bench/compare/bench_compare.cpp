// Throughput of the compare engine on f32 pairs, as a ratio of a memory-bandwidth baseline that
// reads the same bytes on the same threads in the same run, and against numpy computing the same
// metrics on the same data.
//
//   bench_compare [--elements=N] [--numpy] [google-benchmark flags]
// --elements (default 16M) sets the pair size; --numpy also times numpy_metrics.py
// (/usr/bin/python3) on the same data and prints both throughputs.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "metrics.h"

namespace {

std::int64_t g_elements = std::int64_t(1) << 24;

struct Data {
  ds::Tensor ref, cand;
};

const Data& data() {
  static const Data d = [] {
    Data out{ds::Tensor(ds::DType::f32, {g_elements}), ds::Tensor(ds::DType::f32, {g_elements})};
    std::mt19937 rng(1);
    std::normal_distribution<float> g;
    float* r = out.ref.data<float>();
    float* c = out.cand.data<float>();
    for (std::int64_t i = 0; i < g_elements; ++i) {
      r[i] = g(rng);
      // Honest rounding-level noise, and a few elements off by more.
      c[i] = r[i] * (1 + 1e-7f * g(rng)) + ((i % 100003) == 0 ? 1e-3f : 0.0f);
    }
    return out;
  }();
  return d;
}

std::int64_t bytes() { return 2 * g_elements * std::int64_t(sizeof(float)); }

// Memory-bandwidth baseline: read both arrays once on all cores, in the same fixed chunks.
// XOR of the bits vectorises (integer XOR is associative), so this is bound by memory, not by
// the latency of a floating-point add chain.
double read_both(const float* fa, const float* fb, std::int64_t n) {
  const auto* a = reinterpret_cast<const std::uint32_t*>(fa);
  const auto* b = reinterpret_cast<const std::uint32_t*>(fb);
  const int nt = int(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t chunk = 1 << 16, chunks = (n + chunk - 1) / chunk;
  std::vector<double> sums(static_cast<std::size_t>(chunks));
  std::atomic<std::int64_t> next{0};
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < nt; ++t)
      pool.emplace_back([&] {
        for (std::int64_t k; (k = next.fetch_add(1)) < chunks;) {
          std::uint32_t s = 0;
          for (std::int64_t i = k * chunk; i < std::min(n, (k + 1) * chunk); ++i) s ^= a[i] ^ b[i];
          sums[std::size_t(k)] = double(s);
        }
      });
  }
  double s = 0;
  for (double x : sums) s += x;
  return s;
}

template <class F>
double best_seconds(F&& f, int reps = 5) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void BM_ReadBaseline(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state)
    benchmark::DoNotOptimize(read_both(d.ref.data<float>(), d.cand.data<float>(), g_elements));
  state.SetBytesProcessed(state.iterations() * bytes());
}
BENCHMARK(BM_ReadBaseline)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ComputeMetrics(benchmark::State& state) {
  const Data& d = data();
  const double baseline = best_seconds(
      [&] { benchmark::DoNotOptimize(read_both(d.ref.data<float>(), d.cand.data<float>(), g_elements)); });
  for (auto _ : state) {
    auto m =
        ds::compute_metrics(d.ref.view(), d.cand.view(), ds::DType::f32, {1e-5, 1.3e-6}, int(state.range(0)));
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(state.iterations() * bytes());
  state.counters["baseline_GBps"] = double(bytes()) / baseline / 1e9;
}
BENCHMARK(BM_ComputeMetrics)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

// Each SIMD build of the f32 lane kernel, and the element-by-element loop, on all cores.
void BM_ScanPath(benchmark::State& state) {
  const auto path = ds::ScanPath(state.range(0));
  if (!ds::scan_path_supported(path)) {
    state.SkipWithError("this CPU cannot run this build");
    return;
  }
  const Data& d = data();
  for (auto _ : state)
    benchmark::DoNotOptimize(
        ds::compute_metrics(d.ref.view(), d.cand.view(), ds::DType::f32, {1e-5, 1.3e-6}, 0, path));
  state.SetBytesProcessed(state.iterations() * bytes());
}
BENCHMARK(BM_ScanPath)
    ->ArgName("path")
    ->Arg(int(ds::ScanPath::scalar))
    ->Arg(int(ds::ScanPath::lanes_baseline))
    ->Arg(int(ds::ScanPath::lanes_avx2))
    ->Arg(int(ds::ScanPath::lanes_avx512))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Our engine vs the read baseline vs numpy, on the same data, printed as one comparison.
int compare_with_numpy() {
  const Data& d = data();
  const auto raw = std::filesystem::temp_directory_path() / fmt::format("ds_bench_{}.f32", ::getpid());
  {
    std::ofstream out(raw, std::ios::binary);
    out.write(reinterpret_cast<const char*>(d.ref.raw()), std::streamsize(d.ref.nbytes()));
    out.write(reinterpret_cast<const char*>(d.cand.raw()), std::streamsize(d.cand.nbytes()));
  }
  const double ours = best_seconds([&] {
    benchmark::DoNotOptimize(
        ds::compute_metrics(d.ref.view(), d.cand.view(), ds::DType::f32, {1e-5, 1.3e-6}));
  });
  const double base = best_seconds(
      [&] { benchmark::DoNotOptimize(read_both(d.ref.data<float>(), d.cand.data<float>(), g_elements)); });
  const std::string cmd = fmt::format("/usr/bin/python3 {} {} {}", DS_NUMPY_SCRIPT, raw.string(), g_elements);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  double numpy = -1;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) {
    std::sscanf(line, "numpy_seconds %lf", &numpy);
    std::fputs(line, stdout);
  }
  const int rc = p ? ::pclose(p) : -1;
  std::filesystem::remove(raw);
  const auto m = ds::compute_metrics(d.ref.view(), d.cand.view(), ds::DType::f32, {1e-5, 1.3e-6});
  fmt::print("ours  max_abs {:.9g} mismatches {} max_ulp {}\n", m.max_abs, m.mismatches, m.max_ulp);
  const double gb = double(bytes()) / 1e9;
  fmt::print("{} f32 pairs ({:.0f} MB), {} threads\n", g_elements, gb * 1e3,
             std::thread::hardware_concurrency());
  fmt::print("read baseline : {:8.2f} GB/s\n", gb / base);
  fmt::print("compare engine: {:8.2f} GB/s = {:.2f} x baseline\n", gb / ours, base / ours);
  if (numpy > 0)
    fmt::print("numpy         : {:8.2f} GB/s; engine is {:.1f} x numpy\n", gb / numpy, numpy / ours);
  else
    fmt::print("numpy         : not measured (python3/numpy unavailable, rc {})\n", rc);
  return numpy > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool numpy = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--elements=", 11) == 0)
      g_elements = std::atoll(argv[i] + 11);
    else if (std::strcmp(argv[i], "--numpy") == 0)
      numpy = true;
    else
      args.push_back(argv[i]);
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return numpy ? compare_with_numpy() : 0;
}
