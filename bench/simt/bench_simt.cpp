// Cost of running a kernel through the SIMT CPU runtime, as a ratio to a plain
// C++ loop computing the same result, both timed in the same process.
//   GemvVsPlainLoop       a textbook warp-per-row GEMV (tests/simt/kernels/gemv.cu): five shuffles
//                         per output row, so it measures the runtime's collective path. Its third
//                         argument is the runtime's host threads: 1 compares one core with one core
//                         (the figure docs/simt.md tracks), 0 is the runtime's default (every core)
//                         against the same one-core loop.
//   RacecheckVsPlainRun   the same textbook GEMV under the shared-memory hazard checker
//                         (Config::racecheck, run --simt-racecheck) against a plain SIMT run of
//                         it, both one host thread, timed in the same process: the checker's cost
//                         where the kernel is built without access hooks (page faults).
//   HookedRacecheckVsPlainRun  the same GEMV built with access hooks (the CHECKED flavour, loaded
//                         from checked_gemv_module.cpp's module) under the hazard checker, against
//                         the plain flavour's SIMT run of it in this process: the checker's cost
//                         where kernels are built for it (issue 38: at most 5x).
//   MemcheckVsPlainRun    the same checked GEMV under memcheck (Config::memcheck, run
//                         --simt-memcheck: guarded buffers, every 8- and 16-byte access checked)
//                         against the plain flavour's SIMT run (issue 51: at most 3x).
//   InterleavedVsPlainRun the same checked GEMV interleaved at every access (Config::interleave:
//                         the first schedule of the reruns that `--race-check`, `check` and
//                         `verify` make) against the plain flavour's SIMT run, wall time (the
//                         blocks take turns on several host threads).
//   FusedGemvVsPlainLoop  the product's fused GEMV (kernels/gemv.cu, what the simt candidate runs
//                         for every projection) on bf16 weights and T tokens, one host thread,
//                         against the plain loop over the same bf16 weights.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels.h"
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

// CPU time of the calling thread, in seconds: on a loaded machine a one-host-thread run is
// preempted inside nearly every timed call, and this clock does not count the time it waited.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The best (shortest) wall and calling-thread CPU time of some calls.
struct Best {
  double wall = 1e30;
  double cpu = 1e30;
  template <class Fn>
  void time(Fn& fn) {
    const double c0 = thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    benchmark::ClobberMemory();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    wall = std::min(wall, dt.count());
    cpu = std::min(cpu, thread_cpu_seconds() - c0);
  }
};

// Best of 15 timed calls of `fn`: the baseline side of every case.
template <class Fn>
Best best_of_15(Fn fn) {
  Best best;
  for (int rep = 0; rep < 15; ++rep) best.time(fn);
  return best;
}

// Best of the benchmark's own iterations of `fn`: the SIMT side.
template <class Fn>
Best best_of_state(benchmark::State& state, Fn fn) {
  Best best;
  for (auto _ : state) best.time(fn);
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

  const Best simt =
      best_of_state(state, [&] { simt_test::gemv(dW.data(), dx.data(), dy.data(), rows, cols); });
  // Best-of on both sides: the machine is shared, and the minimum is the
  // least noisy estimate of each.
  const Best plain = best_of_15([&] { plain_gemv(W.data(), x.data(), y.data(), rows, cols); });
  state.counters["plain_ms"] = plain.wall * 1e3;
  state.counters["simt_best_ms"] = simt.wall * 1e3;
  state.counters["ratio"] = simt.wall / plain.wall;
  state.counters["ns_per_cuda_thread"] = simt.wall * 1e9 / (static_cast<double>(rows) * 32);
  // One host thread runs the grid on the calling thread, so its CPU time is the whole cost: the
  // ratio a loaded machine cannot inflate (meaningless with more host threads).
  if (cfg.host_threads == 1) state.counters["cpu_ratio"] = simt.cpu / plain.cpu;
}

void RacecheckVsPlainRun(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const int cols = static_cast<int>(state.range(1));
  const auto W = random_floats(static_cast<std::size_t>(rows) * cols, 1);
  const auto x = random_floats(cols, 2);
  simt::DeviceBuffer<float> dW(W), dx(x), dy(rows);
  simt::Config cfg;
  cfg.host_threads = 1;
  auto run = [&] { simt_test::gemv(dW.data(), dx.data(), dy.data(), rows, cols); };
  simt::set_config(cfg);
  run();  // warm the fiber pool
  const Best plain = best_of_15(run);
  cfg.racecheck = true;
  simt::set_config(cfg);
  const Best checked = best_of_state(state, run);
  cfg.racecheck = false;
  simt::set_config(cfg);
  state.counters["plain_simt_ms"] = plain.wall * 1e3;
  state.counters["racecheck_best_ms"] = checked.wall * 1e3;
  state.counters["ratio"] = checked.wall / plain.wall;
  state.counters["cpu_ratio"] = checked.cpu / plain.cpu;
}

// The checked GEMV's module (checked_gemv_module.cpp), loaded once.
struct CheckedGemv {
  void (*setup)(const float* W, const float* x, int rows, int cols, int memcheck) = nullptr;
  int (*run)(int racecheck, float* y_out) = nullptr;
  std::string error;
};
const CheckedGemv& checked_gemv() {
  static const CheckedGemv m = [] {
    CheckedGemv c;
#ifndef BENCH_CHECKED_GEMV_MODULE
    c.error = "no checked flavour in this build (a sanitizer build, or not GCC/Clang on x86-64)";
    return c;
#else
    void* h = ::dlopen(BENCH_CHECKED_GEMV_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      c.error = ::dlerror();
      return c;
    }
    c.setup = reinterpret_cast<decltype(c.setup)>(::dlsym(h, "bench_checked_gemv_setup"));
    c.run = reinterpret_cast<decltype(c.run)>(::dlsym(h, "bench_checked_gemv_run"));
    if (c.setup == nullptr || c.run == nullptr) c.error = "bench_checked_gemv_* not found in the module";
    return c;
#endif
  }();
  return m;
}

// What the checked module's benchmarks share: random W and x (rows x cols, the benchmark's first
// two arguments), the plain flavour's GEMV of them on one host thread and its best time, the
// module's copy of them (memcheck's guarded blocks under `memcheck`), and one warm run of the
// module under `check` (bench_checked_gemv_run), which must find nothing and give the plain run's
// bits. Null, with the benchmark skipped, where it cannot run or does not.
struct CheckedGemvBench {
  CheckedGemvBench(int rows, int cols)
      : rows(rows),
        cols(cols),
        W(random_floats(static_cast<std::size_t>(rows) * cols, 1)),
        x(random_floats(cols, 2)),
        dW(W),
        dx(x),
        dy(rows) {}
  void plain_run() { simt_test::gemv(dW.data(), dx.data(), dy.data(), rows, cols); }
  int rows, cols;
  std::vector<float> W, x;
  simt::DeviceBuffer<float> dW, dx, dy;
  Best plain;
};
std::unique_ptr<CheckedGemvBench> start_checked_gemv(benchmark::State& state, int check, bool memcheck) {
  const CheckedGemv& m = checked_gemv();
  if (!m.error.empty()) {
    state.SkipWithError(m.error.c_str());
    return nullptr;
  }
  auto b =
      std::make_unique<CheckedGemvBench>(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  simt::Config cfg;
  cfg.host_threads = 1;
  simt::set_config(cfg);
  b->plain_run();  // warm the fiber pool
  m.setup(b->W.data(), b->x.data(), b->rows, b->cols, memcheck ? 1 : 0);
  std::vector<float> checked_y(static_cast<std::size_t>(b->rows));
  const int findings = m.run(check, checked_y.data());  // warm the module's fiber pools
  if (findings != 0 || checked_y != b->dy.to_host()) {
    const std::string why = fmt::format(
        "the checked GEMV under check {} made {} finding(s) or computed other bits than the plain one", check,
        findings);
    state.SkipWithError(why.c_str());
    return nullptr;
  }
  b->plain = best_of_15([&] { b->plain_run(); });
  return b;
}

void HookedRacecheckVsPlainRun(benchmark::State& state) {
  const auto b = start_checked_gemv(state, 1, false);
  if (!b) return;
  const CheckedGemv& m = checked_gemv();
  int reports = 0;
  const Best hooks_off = best_of_15([&] { (void)m.run(0, nullptr); });
  const Best checked = best_of_state(state, [&] { reports += m.run(1, nullptr); });
  state.counters["plain_simt_ms"] = b->plain.wall * 1e3;
  state.counters["racecheck_best_ms"] = checked.wall * 1e3;
  state.counters["ratio"] = checked.wall / b->plain.wall;
  state.counters["cpu_ratio"] = checked.cpu / b->plain.cpu;
  // The checked flavour with the checker off: what the hooks alone cost.
  state.counters["hooks_off_cpu_ratio"] = hooks_off.cpu / b->plain.cpu;
  state.counters["race_reports"] = reports;
}

void MemcheckVsPlainRun(benchmark::State& state) {
  const auto b = start_checked_gemv(state, 2, true);
  if (!b) return;
  const CheckedGemv& m = checked_gemv();
  int findings = 0;
  const Best checked = best_of_state(state, [&] { findings += m.run(2, nullptr); });
  m.setup(b->W.data(), b->x.data(), b->rows, b->cols, 0);  // plain buffers again for the other benchmarks
  state.counters["plain_simt_ms"] = b->plain.wall * 1e3;
  state.counters["memcheck_best_ms"] = checked.wall * 1e3;
  state.counters["ratio"] = checked.wall / b->plain.wall;
  state.counters["cpu_ratio"] = checked.cpu / b->plain.cpu;
  state.counters["memcheck_findings"] = findings;
}

void InterleavedVsPlainRun(benchmark::State& state) {
  const auto b = start_checked_gemv(state, 3, false);
  if (!b) return;
  const CheckedGemv& m = checked_gemv();
  const Best interleaved = best_of_state(state, [&] { (void)m.run(3, nullptr); });
  state.counters["plain_simt_ms"] = b->plain.wall * 1e3;
  state.counters["interleaved_best_ms"] = interleaved.wall * 1e3;
  state.counters["ratio"] = interleaved.wall / b->plain.wall;
}

// y[t, r] = sum_c W[r, c] x[t, c] over bf16 weights, what kernels/gemv.cu computes, as a CPU
// reference would write it.
__attribute__((noinline)) void plain_gemv_bf16(const __nv_bfloat16* W, const float* x, float* y, int T,
                                               int rows, int cols) {
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < rows; ++r) {
      const __nv_bfloat16* w = W + static_cast<std::size_t>(r) * cols;
      const float* xt = x + static_cast<std::size_t>(t) * cols;
      float acc = 0.0f;
      for (int c = 0; c < cols; ++c) acc += __bfloat162float(w[c]) * xt[c];
      y[static_cast<std::size_t>(t) * rows + r] = acc;
    }
}

void FusedGemvVsPlainLoop(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const int cols = static_cast<int>(state.range(1));
  const int T = static_cast<int>(state.range(2));
  const auto wf = random_floats(static_cast<std::size_t>(rows) * cols, 1);
  const auto xf = random_floats(static_cast<std::size_t>(T) * cols, 2);
  std::vector<__nv_bfloat16> W(wf.size());
  for (std::size_t i = 0; i < wf.size(); ++i) W[i] = __float2bfloat16_rn(wf[i]);
  std::vector<__half> xh(xf.size());
  std::vector<float> x(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) {
    xh[i] = __float2half_rn(xf[i]);
    x[i] = __half2float(xh[i]);
  }
  simt::DeviceBuffer<__nv_bfloat16> dW(W);
  simt::DeviceBuffer<__half> dx(xh), dy(static_cast<std::size_t>(T) * rows);
  simt::Config cfg;
  cfg.host_threads = 1;
  simt::set_config(cfg);
  const dsk::KernelTable& k = dsk_simt::table();
  auto run = [&] {
    k.gemv(dW.data(), dsk::WType::bf16, dx.data(), nullptr, dy.data(), nullptr, T, rows, cols);
  };
  run();  // warm the fiber pool
  const Best simt = best_of_state(state, run);
  std::vector<float> y(static_cast<std::size_t>(T) * rows);
  const Best plain = best_of_15([&] { plain_gemv_bf16(W.data(), x.data(), y.data(), T, rows, cols); });
  state.counters["plain_ms"] = plain.wall * 1e3;
  state.counters["simt_best_ms"] = simt.wall * 1e3;
  state.counters["ratio"] = simt.wall / plain.wall;
  state.counters["cpu_ratio"] = simt.cpu / plain.cpu;
  state.counters["ns_per_row_token"] = simt.wall * 1e9 / (static_cast<double>(rows) * T);
}

BENCHMARK(FusedGemvVsPlainLoop)
    ->ArgNames({"rows", "cols", "T"})
    ->Args({896, 896, 1})
    ->Args({4864, 896, 1})
    ->Args({896, 4864, 1})
    ->Args({896, 896, 16})
    ->Args({4864, 896, 16})
    ->Args({896, 4864, 16})
    ->Args({37, 100, 3})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(GemvVsPlainLoop)
    ->ArgNames({"rows", "cols", "host_threads"})
    ->Args({4864, 896, 1})
    ->Args({896, 896, 1})
    ->Args({37, 100, 1})
    ->Args({4864, 896, 0})
    ->Args({896, 896, 0})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(RacecheckVsPlainRun)
    ->ArgNames({"rows", "cols"})
    ->Args({64, 896})
    ->Args({37, 100})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(HookedRacecheckVsPlainRun)
    ->ArgNames({"rows", "cols"})
    ->Args({64, 896})
    ->Args({896, 896})
    ->Args({4864, 896})
    ->Args({37, 100})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(InterleavedVsPlainRun)
    ->ArgNames({"rows", "cols"})
    ->Args({64, 896})
    ->Args({896, 896})
    ->Args({37, 100})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(MemcheckVsPlainRun)
    ->ArgNames({"rows", "cols"})
    ->Args({64, 896})
    ->Args({896, 896})
    ->Args({37, 100})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
