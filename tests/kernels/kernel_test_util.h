// Shared by the kernel tests: device buffers through the SIMT table, f16-rounded random
// inputs, a one-ULP comparison against double, and the every-thread-order determinism run.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtype.h"
#include "kernels.h"
#include "mutants/mutants.h"
#include "simt/simt.h"

namespace kt {

using dsk::WType;
using Bits = std::vector<std::uint16_t>;
inline const dsk::KernelTable& K() { return dsk_simt::table(); }
// The simt table of mutant <name> (kernels/mutants/<name>.patch or .cu).
inline const dsk::KernelTable& Mutant(const std::string& name) {
  const dsk::KernelTable* t = dsk_simt::mutant_table(name);
  if (t == nullptr) throw std::invalid_argument("no kernel mutant " + name);
  return *t;
}

// A device buffer of raw bytes.
struct Buf {
  void* p = nullptr;
  std::size_t n = 0;
  explicit Buf(std::size_t bytes) : p(K().alloc(bytes)), n(bytes) {}
  template <class T>
  explicit Buf(const std::vector<T>& v) : Buf(v.size() * sizeof(T)) {
    K().to_device(p, v.data(), n);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { K().release(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
  Bits bits() const {
    Bits b(n / 2);
    K().to_host(b.data(), p, n);
    return b;
  }
};

inline std::vector<double> normal(std::size_t n, double std, std::uint32_t seed, double mean = 0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(mean, std);
  std::vector<double> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
// Rounded to f16: the kernel's input and the reference's, identical.
inline Bits to_f16(const std::vector<double>& v) {
  Bits b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = ds::f64_to_f16(v[i]);
  return b;
}
inline std::vector<double> f16_values(const Bits& b) {
  std::vector<double> v(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) v[i] = ds::f16_to_f32(b[i]);
  return v;
}
inline std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// A weight matrix in `wt` (raw bytes) and the values the kernel sees.
struct Weights {
  std::vector<std::uint8_t> bytes;
  std::vector<double> values;
};
inline Weights make_weights(WType wt, std::size_t n, std::uint32_t seed, std::size_t pad_front = 0) {
  const auto v = normal(n, 0.05, seed);
  Weights w;
  const std::size_t es = wt == WType::f32 ? 4 : 2;
  w.bytes.resize((n + pad_front) * es);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* dst = w.bytes.data() + (i + pad_front) * es;
    if (wt == WType::f32) {
      const float f = float(v[i]);
      std::memcpy(dst, &f, 4);
      w.values.push_back(f);
    } else {
      const std::uint16_t h = wt == WType::f16 ? ds::f64_to_f16(v[i]) : ds::f64_to_bf16(v[i]);
      std::memcpy(dst, &h, 2);
      w.values.push_back(wt == WType::f16 ? ds::f16_to_f32(h) : ds::bf16_to_f32(h));
    }
  }
  return w;
}

// |got - ref| within one f16 ULP of ref (the output rounding plus f32 accumulation), plus
// `abs_slack` for values near zero.
inline void expect_close(const Bits& got, const std::vector<double>& ref, double abs_slack,
                         const char* what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = ds::f16_to_f32(got[i]);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::max(std::abs(ref[i]), 6.1e-5)), -14) - 10);
    if (!(std::abs(g - ref[i]) <= ulp + abs_slack) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " got " << g << " expected " << ref[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

// Runs `launch` under every SIMT thread order and 1 host thread, 3 (more than the 2-core CI
// machine has) and the default (every core); the bytes `read` returns must be identical every
// time. Returns them.
inline Bits same_under_every_order(const std::function<void()>& launch, const std::function<Bits()>& read) {
  Bits first;
  int run = 0;
  for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    for (unsigned threads : {1u, 3u, simt::Config{}.host_threads}) {
      simt::Config cfg;
      cfg.order = order;
      cfg.seed = 7 + run;
      cfg.host_threads = threads;
      simt::ScopedConfig scoped(cfg);
      launch();
      const Bits b = read();
      if (run++ == 0)
        first = b;
      else
        EXPECT_TRUE(b == first) << "output differs under order " << int(order) << ", " << threads
                                << " host threads (0: every core)";
    }
  }
  return first;
}

}  // namespace kt
