// Decode-step projections (GEMV, one token) of the oracle on qwen2.5-0.5b shapes. A GEMV reads
// every weight once, so it is memory bound: each case also times a plain sum over the same
// bytes, split over the same threads, and reports achieved bytes/s as a fraction of that
// baseline (counter `of_sum_bw`). Weights are f64 (Arg 1: f32, as the Reference holds an f32
// checkpoint's matrices since issue 17; bf16 and f16 rows are widened to f64 first).
//
// BM_QuantizedDecodeProjection times `linear` on a block-quantized matrix (Q8_0, Q4_K, Q6_K: a
// GGUF's matrices as the loader keeps them, decoded a row at a time) against a plain sum over the
// same stored bytes, as `of_sum_bw`: issue 54 asks for at least 0.5 (within 2x of reading them).
//
// BM_LinearVsOld times `linear` on bf16 weights (the real-shape presets' dtype) against a copy of
// the kernel it replaced (a weight row widened through a function pointer per element, then one
// dot product per token row), in the same process on the same data, and reports the ratio as
// `speedup_vs_old`; it also checks that both give the same bits.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "loaders/quant.h"
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
    ds::parallel_for(w.dim(0), w.numel(), [&](std::int64_t b, std::int64_t e) {
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

// Random blocks of `type` whose f16 scales are small and finite: the decoder's work does not depend on
// the values, only their being numbers. `scale_at` lists each block's f16 scale fields.
struct QuantType {
  const char* name;
  ds::ref::GgmlType type;
  std::vector<int> scale_at;
};
const QuantType kQuantTypes[] = {{"Q8_0", ds::ref::GgmlType::Q8_0, {0}},
                                 {"Q4_K", ds::ref::GgmlType::Q4_K, {0, 2}},
                                 {"Q6_K", ds::ref::GgmlType::Q6_K, {208}}};

void BM_QuantizedDecodeProjection(benchmark::State& state) {
  const Proj& p = kProj[state.range(0)];
  const QuantType& qt = kQuantTypes[state.range(1)];
  const auto info = *ds::ref::ggml_type_info(std::uint32_t(qt.type));
  const std::size_t row_bytes = std::size_t(ds::ref::ggml_nbytes(info, p.in));
  auto bytes = std::make_shared<std::vector<std::byte>>(row_bytes * std::size_t(p.out));
  ds::ref::NormalStream rng(11, "quant-bench");
  for (auto& b : *bytes) b = std::byte(std::uint8_t(std::uint64_t(std::abs(rng.next()) * 1e6) & 0xff));
  const std::uint16_t scale = ds::f32_to_f16(0.002f);
  for (std::size_t at = 0; at < bytes->size(); at += std::size_t(info.block_bytes))
    for (int off : qt.scale_at) std::memcpy(bytes->data() + at + std::size_t(off), &scale, 2);
  const ds::QuantMatrix w{.type = qt.name,
                          .shape = {p.out, p.in},
                          .row_bytes = row_bytes,
                          .decode = ds::ref::ggml_row_decoder(qt.type),
                          .owner = bytes,
                          .data = bytes->data()};
  // The same bytes as a tensor, for the plain sum.
  ds::Tensor stored(ds::DType::f64, {p.out, std::int64_t(row_bytes / 8)});
  std::memcpy(stored.raw(), bytes->data(), std::min(stored.nbytes(), bytes->size()));
  const ds::Tensor x = random({1, p.in}, ds::DType::f64);
  const double baseline = sum_seconds(stored);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(ds::ref::linear(x, w, nullptr));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.SetLabel(std::string(p.name) + " " + qt.name);
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(w.nbytes()));
  report(state, double(w.nbytes()), seconds / double(state.iterations()), baseline);
}

// The kernel `linear` used before the tiled one (kept here as the baseline to beat).
double old_dot(const double* w, const double* x, std::int64_t n) {
  double l0 = 0, l1 = 0, l2 = 0, l3 = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    l0 += w[i] * x[i];
    l1 += w[i + 1] * x[i + 1];
    l2 += w[i + 2] * x[i + 2];
    l3 += w[i + 3] * x[i + 3];
  }
  double acc = (l0 + l1) + (l2 + l3);
  for (; i < n; ++i) acc += w[i] * x[i];
  return acc;
}

ds::Tensor old_linear(const ds::Tensor& x, const ds::Tensor& w, float (*widen)(std::uint16_t)) {
  const std::int64_t rows = x.dim(0), in = w.dim(1), out = w.dim(0);
  ds::Tensor y(ds::DType::f64, {rows, out});
  const double* xs = x.data<double>();
  const std::uint16_t* ws = w.data<std::uint16_t>();
  double* ys = y.data<double>();
  ds::parallel_for(out, rows * out * in, [&](std::int64_t b, std::int64_t e) {
    std::vector<double> row(std::size_t(in), 0.0);
    for (std::int64_t o = b; o < e; ++o) {
      for (std::int64_t i = 0; i < in; ++i) row[std::size_t(i)] = double(widen(ws[o * in + i]));
      for (std::int64_t r = 0; r < rows; ++r) ys[r * out + o] = old_dot(row.data(), xs + r * in, in) + 0.0;
    }
  });
  return y;
}

// Arg 0: a projection of kProj, or 7 for qwen3-0.6b's gate/up (3072 x 1024); Arg 1: token rows
// (1 a decode step, 16 the e2e prefill, 1024 a long prompt).
void BM_LinearVsOld(benchmark::State& state) {
  const Proj p = state.range(0) < 7 ? kProj[state.range(0)] : Proj{"qwen3-0.6b gate", 3072, 1024};
  const ds::Tensor w = random({p.out, p.in}, ds::DType::bf16);
  const ds::Tensor x = random({state.range(1), p.in}, ds::DType::f64);
  double old_s = 1e9;
  ds::Tensor old_y;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    old_y = old_linear(x, w, ds::bf16_to_f32);
    old_s = std::min(old_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  ds::Tensor y;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    y = ds::ref::linear(x, w, nullptr);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (std::memcmp(y.raw(), old_y.raw(), y.nbytes()) != 0) {
    std::fprintf(stderr, "BM_LinearVsOld: linear and the old kernel differ (%s)\n", p.name);
    std::exit(1);
  }
  state.SetLabel(p.name);
  state.counters["old_ms"] = benchmark::Counter(old_s * 1e3);
  state.counters["speedup_vs_old"] = benchmark::Counter(old_s / (seconds / double(state.iterations())));
}

BENCHMARK(BM_LinearVsOld)
    ->ArgsProduct({{0, 4, 6}, {1, 16}})
    ->Args({7, 1024})
    ->ArgNames({"proj", "rows"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeProjection)
    ->ArgsProduct({benchmark::CreateDenseRange(0, 6, 1), {0, 1}})
    ->ArgNames({"proj", "f32"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeStepAllProjections)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QuantizedDecodeProjection)
    ->ArgsProduct({{0, 4, 6}, {0, 1, 2}})
    ->ArgNames({"proj", "type"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
