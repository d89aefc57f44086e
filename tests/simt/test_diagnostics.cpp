// Each planted misuse must surface as simt::KernelError naming file:line, and
// the runtime must stay usable for the next launch.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "test_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

std::string site(const char* marker) { return fmt::format("diag.cu:{}", line_of("diag.cu", marker)); }

// A correct launch after a failed one: the fiber pool must have recovered.
void expect_runtime_healthy() {
  const int rows = 37, cols = 100;
  const auto W = random_floats(static_cast<size_t>(rows) * cols, 1);
  const auto x = random_floats(cols, 2);
  simt::DeviceBuffer<float> dW(W), dx(x), dy(rows);
  gemv(dW.data(), dx.data(), dy.data(), rows, cols);
  const auto y = dy.to_host();
  for (int r = 0; r < rows; ++r) {
    double ref = 0;
    for (int c = 0; c < cols; ++c) ref += static_cast<double>(W[r * cols + c]) * x[c];
    ASSERT_NEAR(y[r], ref, 1e-4) << "row " << r;
  }
}

struct DiagCase {
  const char* name;
  void (*run)();
  const char* marker;
  const char* phrase;
};
void PrintTo(const DiagCase& c, std::ostream* os) { *os << c.name; }

class Diagnostics : public ::testing::TestWithParam<std::tuple<DiagCase, unsigned>> {};

TEST_P(Diagnostics, NamesSiteAndRecovers) {
  const auto& [c, host_threads] = GetParam();
  for (simt::Order order : {simt::Order::forward, simt::Order::reverse, simt::Order::random}) {
    simt::Config cfg;
    cfg.order = order;
    cfg.seed = 3;
    cfg.host_threads = host_threads;
    simt::ScopedConfig scoped(cfg);
    const std::string msg = error_of(c.run);
    EXPECT_NE(msg.find(site(c.marker)), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.phrase), std::string::npos) << msg;
    expect_runtime_healthy();
  }
}

const DiagCase kDiagCases[] = {
    {"divergent_sync", diag_divergent_sync, "@diag:divergent-", "divergent __syncthreads"},
    {"exited_lane", diag_exited_lane, "@diag:exited", "which exited"},
    {"deadlock", diag_deadlock, "@diag:deadlock-shfl", "deadlock"},
    {"lane_not_in_mask", diag_lane_not_in_mask, "@diag:not-in-mask", "not in its mask"},
    {"mismatched", diag_mismatched_collective, "@diag:mismatch-", "different warp collectives"},
    {"source_not_in_mask", diag_source_not_in_mask, "@diag:source-not-in-mask", "not in mask"},
};

INSTANTIATE_TEST_SUITE_P(Planted, Diagnostics,
                         ::testing::Combine(::testing::ValuesIn(kDiagCases), ::testing::Values(1u, 2u)),
                         [](const auto& info) {
                           return fmt::format("{}_{}threads", std::get<0>(info.param).name,
                                              std::get<1>(info.param));
                         });

TEST(Diagnostics, DeadlockNamesBarrierToo) {
  const std::string msg = error_of(diag_deadlock);
  EXPECT_NE(msg.find(site("@diag:deadlock-bar")), std::string::npos) << msg;
}

TEST(Diagnostics, StrictModeReportsBarrierAfterExit) {
  diag_strict_exit();  // tolerated by default, as on NVIDIA hardware
  simt::Config cfg;
  cfg.strict_barriers = true;
  {
    simt::ScopedConfig scoped(cfg);
    const std::string msg = error_of(diag_strict_exit);
    EXPECT_NE(msg.find(site("@diag:strict")), std::string::npos) << msg;
    EXPECT_NE(msg.find("exited"), std::string::npos) << msg;
  }
  expect_runtime_healthy();
}

TEST(Diagnostics, InvalidLaunchConfiguration) {
  const std::string msg = error_of(diag_bad_launch);
  EXPECT_NE(msg.find("invalid configuration"), std::string::npos) << msg;
  expect_runtime_healthy();
}

}  // namespace
}  // namespace simt_test
