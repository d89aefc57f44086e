// Memcheck (Config::memcheck, src/memcheck.h) on planted kernels built CHECKED: each bad access or
// bad free is a finding naming its kind, the memory relative to its allocation and the kernel's
// line, and none crashes the process; the correct twins give no finding. This binary links only the
// checked flavour of the memcheck kernels (tests/simt/kernels/memcheck).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "memcheck_cases.h"
#include "test_support.h"

namespace simt_test {
namespace {

bool have_symbolizer() {
  return std::system(
             "command -v llvm-symbolizer > /dev/null 2>&1 || command -v addr2line > /dev/null 2>&1") == 0;
}

struct MemcheckCase {
  const char* name;
  std::function<void()> run;
  // What the one finding must say (each a substring); empty: no finding at all.
  std::vector<const char*> texts;
  const char* file = nullptr;  // in tests/simt/kernels: the kernel's file, whose marker line it names
  const char* marker = nullptr;
};
void PrintTo(const MemcheckCase& c, std::ostream* os) { *os << c.name; }

template <class F>
std::function<void()> discard(F f) {
  return [f] { (void)f(); };
}

const MemcheckCase kMemcheckCases[] = {
    {"grid_guard_missing_at_one_token",
     discard([] { return memcheck_cases::grid_guard(false); }),
     {"scale_kernel", "out-of-bounds write of 4 bytes", "thread (64,0,0) of block (0,0,0)",
      "0 bytes past the end of a 256-byte block"},
     "memcheck/grid_guard.cu",
     "@mem:grid-guard"},
    {"grid_guard_present", discard([] { return memcheck_cases::grid_guard(true); }), {}},
    {"read_before_start",
     discard(memcheck_cases::read_before_start),
     {"shifted_read_kernel", "out-of-bounds read of 4 bytes", "thread (0,0,0)",
      "16 bytes before the start of a 256-byte block"},
     "memcheck/before_start.cu",
     "@mem:read-before"},
    {"write_before_start",
     discard(memcheck_cases::write_before_start),
     {"hostile_write_kernel", "out-of-bounds write of 4 bytes",
      "64 bytes before the start of a 256-byte block"},
     "memcheck/before_start.cu",
     "@mem:write-before"},
    {"static_shared_past_its_size",
     discard([] { return memcheck_cases::static_shared_past_size(64); }),
     {"tile_kernel", "out-of-bounds write of 4 bytes", "thread (32,0,0)",
      "0 bytes past the end of a 128-byte static __shared__ array"},
     "memcheck/static_shared.cu",
     "@mem:static-shared"},
    {"static_shared_within_its_size",
     discard([] { return memcheck_cases::static_shared_past_size(32); }),
     {}},
    {"static_shared_read_as_float4", discard(memcheck_cases::static_shared_as_float4), {}},
    {"dynamic_shared_past_launched_size",
     discard(memcheck_cases::dynamic_shared_past_size),
     {"stage_kernel", "out-of-bounds write of 4 bytes", "thread (32,0,0)",
      "0 bytes past the end of the block's dynamic shared memory (128 bytes, as launched)"},
     "memcheck/dynamic_shared.cu",
     "@mem:dyn-shared"},
    {"misaligned_float4_load",
     discard([] { return memcheck_cases::float4_load(1); }),
     {"sum4_kernel", "misaligned access of 16 bytes", "thread (0,0,0)", "byte 4 of a 288-byte block",
      "a multiple of 16"},
     "memcheck/float4_load.cu",
     "@mem:float4"},
    {"aligned_float4_load", discard([] { return memcheck_cases::float4_load(0); }), {}},
    {"use_after_free",
     discard(memcheck_cases::use_after_free),
     {"fill_kernel", "use-after-free write of 4 bytes", "byte 0 of a 128-byte block already freed"},
     "memcheck/freed.cu",
     "@mem:use-after-free"},
    {"use_after_device_reset",
     discard(memcheck_cases::use_after_device_reset),
     {"fill_kernel", "use-after-free write of 4 bytes",
      "byte 0 of a 128-byte block already freed by cudaDeviceReset"},
     "memcheck/freed.cu",
     "@mem:use-after-free"},
    {"double_free", memcheck_cases::double_free, {"double free of a 128-byte block"}},
    {"free_of_never_allocated",
     memcheck_cases::free_of_never_allocated,
     {"free of a pointer never allocated"}},
    {"null_store",
     memcheck_cases::null_store,
     {"store_kernel", "null pointer write", "thread (0,0,0) of block (0,0,0)", "address 0x0"},
     "memcheck/wild.cu",
     "@mem:wild"},
    {"store_gigabytes_past_the_end",
     memcheck_cases::wild_store,
     {"store_kernel", "write", "4294967168 bytes past the end of a 128-byte block"},
     "memcheck/wild.cu",
     "@mem:wild"},
    {"read_of_memory_nothing_wrote",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::nothing); }),
     {"copy_kernel", "uninitialized read of 4 bytes", "thread (0,0,0) of block (0,0,0)",
      "byte 0 of a 256-byte block allocated at", "unwritten.cu:", "nothing wrote it"},
     "memcheck/unwritten.cu",
     "@mem:unwritten"},
    {"read_past_what_a_kernel_wrote",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::half_by_kernel); }),
     {"copy_kernel", "uninitialized read of 4 bytes", "thread (32,0,0) of block (0,0,0)",
      "byte 128 of a 256-byte block"},
     "memcheck/unwritten.cu",
     "@mem:unwritten"},
    {"read_after_cudaMemset",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::memset); }),
     {}},
    {"read_after_cudaMemcpy",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::memcpy); }),
     {}},
    {"read_after_a_kernel_wrote_it",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::kernel); }),
     {}},
    {"read_after_host_code_wrote_it",
     discard([] { return memcheck_cases::unwritten_read(memcheck_cases::UnwrittenWay::host_loop); }),
     {}},
};

class Memcheck : public ::testing::TestWithParam<MemcheckCase> {
 protected:
  void SetUp() override {
    (void)simt::take_memory_findings();
    simt::Config c;
    c.memcheck = true;
    simt::set_config(c);
  }
  void TearDown() override { simt::set_config(simt::Config{}); }
};

TEST_P(Memcheck, FindsTheBadAccessAndGoesOn) {
  const MemcheckCase& c = GetParam();
  ASSERT_NO_THROW(c.run());
  const std::vector<std::string> found = simt::take_memory_findings();
  if (c.texts.empty()) {
    EXPECT_TRUE(found.empty()) << fmt::format("{}", fmt::join(found, "\n"));
    return;
  }
  ASSERT_EQ(found.size(), 1u) << fmt::format("{}", fmt::join(found, "\n"));
  const std::string& f = found.front();
  EXPECT_TRUE(f.starts_with(simt::memcheck_note)) << f;
  for (const char* t : c.texts) EXPECT_NE(f.find(t), std::string::npos) << "missing `" << t << "` in: " << f;
  if (c.marker != nullptr && have_symbolizer()) {
    const std::string file = std::string(c.file).substr(std::string(c.file).rfind('/') + 1);
    const std::string line = fmt::format("{}:{}", file, line_of(c.file, c.marker));
    EXPECT_NE(f.find(line), std::string::npos) << "missing " << line << " in: " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Planted, Memcheck, ::testing::ValuesIn(kMemcheckCases),
                         [](const ::testing::TestParamInfo<MemcheckCase>& i) {
                           return std::string(i.param.name);
                         });

// The misaligned load still computes the right sums on the CPU (only a GPU faults on it): memcheck
// reports it without changing what an aligned kernel computes.
TEST(MemcheckResults, AlignedLoadSumsAreExact) {
  simt::Config c;
  c.memcheck = true;
  simt::set_config(c);
  const std::vector<float> out = memcheck_cases::float4_load(0);
  simt::set_config(simt::Config{});
  ASSERT_EQ(out.size(), 16u);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(out[t], static_cast<float>(16 * t + 6)) << t;
  EXPECT_TRUE(simt::take_memory_findings().empty());
}

// An uninitialised read does not stop the launch (a GPU goes on too), so an error the kernel
// makes after it is still the launch's failure, and the read is still a finding.
TEST(MemcheckResults, AnUninitializedReadDoesNotHideALaterFailure) {
  simt::Config c;
  c.memcheck = true;
  simt::set_config(c);
  (void)simt::take_memory_findings();
  EXPECT_THROW(memcheck_cases::unwritten_read_then_assert(), simt::KernelError);
  simt::set_config(simt::Config{});
  const std::vector<std::string> found = simt::take_memory_findings();
  ASSERT_EQ(found.size(), 1u) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_NE(found[0].find("uninitialized read"), std::string::npos) << found[0];
}

// Without memcheck the same allocations are plain: no finding, nothing guarded.
TEST(MemcheckResults, OffFindsNothing) {
  simt::set_config(simt::Config{});
  (void)memcheck_cases::grid_guard(true);
  EXPECT_TRUE(simt::take_memory_findings().empty());
}

}  // namespace
}  // namespace simt_test
