#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "test_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

TEST(Runtime, ThreeDimensionalIndices) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned n = 3 * 2 * 2 * 4 * 3 * 2;
  for (unsigned host : {1u, 2u}) {
    simt::Config cfg;
    cfg.host_threads = host;
    simt::ScopedConfig scoped(cfg);
    simt::DeviceBuffer<unsigned> d(n);
    indices_3d(d.data(), grid, block);
    const auto out = d.to_host();
    unsigned i = 0;
    for (unsigned bz = 0; bz < 2; ++bz)
      for (unsigned by = 0; by < 2; ++by)
        for (unsigned bx = 0; bx < 3; ++bx)
          for (unsigned tz = 0; tz < 2; ++tz)
            for (unsigned ty = 0; ty < 3; ++ty)
              for (unsigned tx = 0; tx < 4; ++tx, ++i)
                ASSERT_EQ(out[i], tx | (ty << 4) | (tz << 8) | (bx << 12) | (by << 16) | (bz << 20)) << i;
  }
}

TEST(Runtime, DefaultHostThreadsIsEveryCore) {
  EXPECT_EQ(simt::Config{}.host_threads, 0u);
  EXPECT_EQ(simt::default_host_threads(), std::max(std::thread::hardware_concurrency(), 1u));
}

TEST(Runtime, AtomicsAcrossHostThreads) {
  for (unsigned host : {1u, 2u}) {
    simt::Config cfg;
    cfg.host_threads = host;
    simt::ScopedConfig scoped(cfg);
    const int blocks = 64;
    std::vector<int> icount = {0, 0};
    std::vector<float> fsum = {0.0f};
    std::vector<unsigned> umax = {0, 0}, umin = {~0u};
    simt::DeviceBuffer<int> di(icount);
    simt::DeviceBuffer<float> df(fsum);
    simt::DeviceBuffer<unsigned> dmax(umax), dmin(umin);
    atomics(di.data(), df.data(), dmax.data(), dmin.data(), blocks);
    const unsigned n = blocks * 128;
    EXPECT_EQ(di.to_host()[0], static_cast<int>(n));
    EXPECT_EQ(di.to_host()[1], 7);
    EXPECT_EQ(df.to_host()[0], 0.5f * n);  // exact: multiples of 0.5 below 2^24
    EXPECT_EQ(dmax.to_host()[0], n - 1);
    EXPECT_EQ(dmax.to_host()[1], n);
    EXPECT_EQ(dmin.to_host()[0], 0u);
  }
}

TEST(Runtime, DynamicSharedPoisonedEveryBlock) {
  const int blocks = 4, threads = 64;
  simt::DeviceBuffer<unsigned> d(blocks * threads);
  smem_poison(d.data(), blocks, threads);
  const auto out = d.to_host();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      const unsigned want = t % 2 == 1 ? static_cast<unsigned>(t + b) : 0xffffffffu;
      ASSERT_EQ(out[b * threads + t], want) << "block " << b << " thread " << t;
    }
  }
}

// Config::poison (driftscope verify): device memory and dynamic shared memory start as the pattern's
// 16-bit word repeated, NaN in every float view for 0 and 1, finite for 2.
TEST(Runtime, PoisonPatternFillsDeviceAndSharedMemory) {
  const struct {
    unsigned poison;
    unsigned word;
  } cases[] = {{0, 0xffffffffu}, {1, 0x7fc17fc1u}, {2, 0x4a3d4a3du}};
  for (const auto& c : cases) {
    simt::Config cfg;
    cfg.poison = c.poison;
    simt::ScopedConfig scoped(cfg);
    const int blocks = 2, threads = 64;
    simt::DeviceBuffer<unsigned> fresh(4);
    for (unsigned v : fresh.to_host()) EXPECT_EQ(v, c.word) << "poison " << c.poison << ": simt::malloc";
    simt::DeviceBuffer<unsigned> d(blocks * threads);
    smem_poison(d.data(), blocks, threads);
    const auto out = d.to_host();
    for (int i = 0; i < blocks * threads; i += 2)
      ASSERT_EQ(out[i], c.word) << "poison " << c.poison << ": dynamic shared slot " << i;
  }
}

TEST(Runtime, StaticSharedIsPerBlock) {
  for (unsigned host : {1u, 2u}) {
    simt::Config cfg;
    cfg.host_threads = host;
    simt::ScopedConfig scoped(cfg);
    const int blocks = 16;
    simt::DeviceBuffer<int> d(blocks);
    static_shared_sum(d.data(), blocks);
    const auto out = d.to_host();
    for (int b = 0; b < blocks; ++b) EXPECT_EQ(out[b], 95 * 96 / 2 + 96 * b) << b;
  }
}

// HIP-CPU once decided "no barriers" from block 0 for the whole grid; here it
// is decided per thread, so blocks and lanes that do meet collectives still work.
TEST(Runtime, FastPathDecidedPerBlockAndThread) {
  for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    simt::Config cfg;
    cfg.order = order;
    simt::ScopedConfig scoped(cfg);
    const int blocks = 6;
    simt::DeviceBuffer<int> d(blocks * 64);
    mixed_fast_path(d.data(), blocks);
    const auto out = d.to_host();
    for (int b = 0; b < blocks; ++b) {
      auto v = [&](int t) { return b % 2 == 1 ? (63 - t) + b : t + b; };
      for (int t = 0; t < 64; ++t) {
        const int lane = t % 32;
        const int want = lane == 0 ? v(t) : v(t) + (lane < 31 ? v(t + 1) : v(t));
        ASSERT_EQ(out[b * 64 + t], want) << "block " << b << " thread " << t;
      }
    }
  }
}

TEST(Runtime, HalfAndBfloat16Helpers) {
  const int n = 64;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 9) * 0.125f - 0.5f;
  simt::DeviceBuffer<float> din(in), dout(n);
  half_ops(din.data(), dout.data(), n);
  const auto out = dout.to_host();
  for (int w = 0; w < n / 32; ++w) {
    float sum = 0;  // all partial sums are exact in half
    for (int l = 0; l < 32; ++l) sum += in[w * 32 + l];
    for (int l = 0; l < 32; ++l) {
      const float a = in[w * 32 + l];
      const float f = a * a + std::exp(a);
      EXPECT_NEAR(out[w * 32 + l], f + sum * 1000.0f, 2e-3f * std::fabs(f) + 1e-3f) << w * 32 + l;
    }
  }
}

TEST(Runtime, DeviceBufferRoundTrip) {
  std::vector<float> v = {1, 2, 3};
  simt::DeviceBuffer<float> d(v);
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.to_host(), v);
  simt::DeviceBuffer<float> moved = std::move(d);
  EXPECT_EQ(moved.to_host(), v);
  simt::DeviceBuffer<unsigned> fresh(2);
  EXPECT_EQ(fresh.to_host()[0], 0xffffffffu);  // poisoned like device memory should be treated
}

// The VmFlags line of /proc/self/smaps for the mapping holding `p` ("" if none).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        line.find(':') > line.find(' '))
      inside = a >= lo && a < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

// simt::malloc asks for transparent huge pages over a large block (VmFlags "hg", MADV_HUGEPAGE),
// not over a small one, and the block is poisoned and usable either way.
TEST(Runtime, LargeDeviceMemoryAsksForHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages (/sys/kernel/mm/transparent_hugepage)";
  const std::size_t big = std::size_t{12} << 20;
  simt::DeviceBuffer<unsigned> large(big / sizeof(unsigned));
  const unsigned* mid = large.data() + large.size() / 2;
  EXPECT_NE(vm_flags_of(mid).find(" hg"), std::string::npos) << vm_flags_of(mid);
  EXPECT_EQ(*mid, 0xffffffffu);
  EXPECT_EQ(large.data()[large.size() - 1], 0xffffffffu);
  simt::DeviceBuffer<unsigned> small(1024);
  EXPECT_EQ(vm_flags_of(small.data()).find(" hg"), std::string::npos) << vm_flags_of(small.data());
}

}  // namespace
}  // namespace simt_test
