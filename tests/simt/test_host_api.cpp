// A kernel file with its host code as repositories ship it (kernels/host_api.cu), built unchanged:
// the device query reports the simulated GPU, events time the launch, a stream carries the work,
// a __constant__ table is filled and read back, cudaLaunchKernel launches from an argument array.
#include <driver_types.h>  // cudaError
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "host_api.h"
#include "simt/simt.h"
#include "test_support.h"

namespace {

TEST(HostApi, ReportsTheSimulatedDevice) {
  // The published figures of the GPU DRIFTSCOPE_SIMT_DEVICE names (an H100 unless it names another).
  const char* env = std::getenv("DRIFTSCOPE_SIMT_DEVICE");
  const bool a100 = env != nullptr && std::string(env) == "a100";
  const host_api::Device d = host_api::query();
  EXPECT_NE(d.name.find(a100 ? "A100" : "H100"), std::string::npos) << d.name;
  EXPECT_NE(d.name.find("simulated"), std::string::npos) << d.name;
  EXPECT_EQ(d.sm_count, a100 ? 108 : 132);
  EXPECT_EQ(d.major, a100 ? 8 : 9);
  EXPECT_EQ(d.minor, 0);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_EQ(d.smem_optin_attr, (a100 ? 163 : 227) * 1024);
  EXPECT_EQ(d.unknown_attr_error, int(cudaErrorInvalidValue));
  EXPECT_EQ(d.blocks_per_sm_256, 8);  // 2048 threads per SM / 256
  EXPECT_EQ(d.func_max_threads, 1024);
}

TEST(HostApi, AStreamEventsAndAConstantTable) {
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  const std::vector<float> table = {1, -2, 0.25f, 3};
  const host_api::Scaled s = host_api::scale_by_table(x, table);
  ASSERT_EQ(s.y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(s.y[i], x[i] * table[i % 4]) << i;
  EXPECT_EQ(s.table, table);
  EXPECT_GE(s.elapsed_ms, 0.0f);
  EXPECT_EQ(s.oversized_copy_error, int(cudaErrorInvalidValue));
}

TEST(HostApi, CudaLaunchKernelFromAnArgumentArray) {
  const std::vector<float> x = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                                18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
                                36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
                                54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69};
  const std::vector<float> y = host_api::add_one_launched(x);
  ASSERT_EQ(y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] + 1) << i;
}

// Its checked build (simt_test_kernels_checked) compiles the same cast: before the checked cast
// skipped pointers to incomplete types, it did not build ("invalid application of '__alignof__' to
// incomplete type 'CUstream_st'").
TEST(HostApi, AStreamHandedOverAsAVoidPointerIsCastBackAndLaunchedOn) {
  const std::vector<float> x = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                                18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
                                35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51,
                                52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68};
  const std::vector<float> y = host_api::add_one_on_opaque_stream(x);
  ASSERT_EQ(y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] + 1) << i;
}

TEST(HostApi, AFailedDeviceAssertStopsTheLaunchNamingItsLineAndThread) {
  EXPECT_EQ(host_api::checked_sqrt({4, 9}), (std::vector<float>{2, 3}));
  std::vector<float> x(100, 1.0f);
  x[70] = -1.0f;  // thread 6 of block 1
  try {
    host_api::checked_sqrt(x);
    FAIL() << "a failed device assert passed";
  } catch (const simt::KernelError& e) {
    const std::string what = e.what();
    const std::string line = std::to_string(simt_test::line_of("host_api.cu", "@assert:non-negative"));
    EXPECT_NE(what.find("device assert failed: `x[i] >= 0.0f` at "), std::string::npos) << what;
    EXPECT_NE(what.find("host_api.cu:" + line), std::string::npos) << what;
    EXPECT_NE(what.find("thread (6,0,0)"), std::string::npos) << what;
    EXPECT_NE(what.find("sqrt_kernel"), std::string::npos) << what;
  }
}

// A failed host assert inside a candidate step is that step's failure, with its words, rather than
// an abort the harness could only report as signal 6; outside a step it aborts as glibc's does.
TEST(HostApi, AFailedHostAssertInAStepThrowsItsWords) {
  EXPECT_EQ(host_api::warps_of(64), 2);
  driftscope_simt_begin_step("layernorm");
  struct EndStep {
    ~EndStep() { driftscope_simt_begin_step(""); }
  } end_step;
  try {
    (void)host_api::warps_of(100);
    FAIL() << "a failed host assert passed";
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    const std::string line = std::to_string(simt_test::line_of("host_api.cu", "@assert:host-block-size"));
    EXPECT_NE(what.find("host assert failed: `block_size % 32 == 0` at "), std::string::npos) << what;
    EXPECT_NE(what.find("host_api.cu:" + line), std::string::npos) << what;
    EXPECT_NE(what.find("warps_of"), std::string::npos) << what;
  }
}

TEST(HostApiDeathTest, AFailedHostAssertOutsideAStepAbortsAsTheCLibraryDoes) {
  EXPECT_DEATH((void)host_api::warps_of(100),
               "host_api.cu:[0-9]+: .*warps_of.*: Assertion `block_size % 32 == 0' failed");
}

TEST(HostApi, DeviceResetFreesEveryLiveBlock) {
  host_api::allocate_then_reset(3);
  EXPECT_EQ(simt::device_reset(), 0u) << "cudaDeviceReset left live blocks behind";
}

TEST(HostApi, MinAndMaxOfAnIntAndAnUnsignedAreUnsignedAsUnderNvcc) {
  const std::vector<unsigned> got = host_api::clamp_indices(64, 40);
  for (unsigned t = 0; t < 64; ++t) {
    // max(-60, t) is max(unsigned(-60), t): the int converts to a huge unsigned, as nvcc's overload does.
    const unsigned want = std::min(40u, t * 2u) + std::max(static_cast<unsigned>(-60), t);
    EXPECT_EQ(got[t], want) << t;
  }
}

}  // namespace
