// Launch records: every launch that completes reaches the installed sink with the kernel's name,
// its configuration and a wall time; a launch that fails reaches it not at all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_kernels.h"
#include "test_support.h"

namespace simt_test {
namespace {

struct Seen {
  std::string kernel;
  unsigned grid[3], block[3];
  unsigned long long smem;
  double seconds;
};

void collect(const simt_launch_info* info, void* user) {
  static_cast<std::vector<Seen>*>(user)->push_back({info->kernel,
                                                    {info->grid[0], info->grid[1], info->grid[2]},
                                                    {info->block[0], info->block[1], info->block[2]},
                                                    info->dyn_smem_bytes,
                                                    info->seconds});
}

class LaunchRecords : public testing::Test {
 protected:
  void SetUp() override { driftscope_simt_set_launch_sink(&collect, &seen_); }
  void TearDown() override { driftscope_simt_set_launch_sink(nullptr, nullptr); }
  std::vector<Seen> seen_;
};

TEST_F(LaunchRecords, NameConfigurationAndTimeOfEachLaunch) {
  simt::DeviceBuffer<unsigned> out(3 * 64);
  smem_poison(out.data(), 3, 64);
  static_shared_sum(simt::DeviceBuffer<int>(4).data(), 4);
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[0].kernel, "simt_test::smem_poison_kernel");  // demangled, no parameter list
  EXPECT_EQ((std::vector<unsigned>{seen_[0].grid[0], seen_[0].grid[1], seen_[0].grid[2]}),
            (std::vector<unsigned>{3, 1, 1}));
  EXPECT_EQ(seen_[0].block[0], 64u);
  EXPECT_EQ(seen_[0].smem, 64u * sizeof(unsigned));
  EXPECT_GT(seen_[0].seconds, 0.0);
  EXPECT_EQ(seen_[1].kernel, "simt_test::static_shared_kernel");
  EXPECT_EQ(seen_[1].grid[0], 4u);
  EXPECT_EQ(seen_[1].smem, 0u);
}

TEST_F(LaunchRecords, FailedLaunchIsNotRecorded) {
  EXPECT_THROW(diag_bad_launch(), simt::KernelError);
  EXPECT_THROW(diag_divergent_sync(), simt::KernelError);
  EXPECT_TRUE(seen_.empty());
}

TEST_F(LaunchRecords, NoSinkNoRecords) {
  driftscope_simt_set_launch_sink(nullptr, nullptr);
  simt::DeviceBuffer<unsigned> out(64);
  smem_poison(out.data(), 1, 64);
  EXPECT_TRUE(seen_.empty());
}

TEST(KernelDisplayName, DemangledWithoutParametersOrReturnType) {
  EXPECT_EQ(simt::kernel_display_name("_ZN8dsk_simt14rmsnorm_kernelEPK6__halfPKfPS0_if"),
            "dsk_simt::rmsnorm_kernel");
  // A template kernel: the demangler's leading return type goes, template arguments stay.
  EXPECT_EQ(simt::kernel_display_name("_ZN8dsk_cuda11gemv_kernelIfEEvPKT_PK6__halfPKfPS4_S9_iiii"),
            "dsk_cuda::gemv_kernel<float>");
  EXPECT_EQ(simt::kernel_display_name("_ZN9simt_test12_GLOBAL__N_118smem_poison_kernelEPj"),
            "simt_test::smem_poison_kernel");
  EXPECT_EQ(simt::kernel_display_name("not_mangled"), "not_mangled");
}

}  // namespace
}  // namespace simt_test
