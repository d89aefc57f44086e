// A repository-shaped kernel file's host code in its checked build (simt_test_kernels_checked):
// what host_api.cu carries that only this build could trip on links and runs. Its <iostream> gives
// the file a dynamic initialiser, which GCC's instrumentation brackets with
// __asan_before/after_dynamic_init (the runtime defines them: before, a plugin built from such a
// file failed to link), and its operator-library entry point casts a void* back to a cudaStream_t,
// a pointer to an incomplete type the checked cast must let through.
#include <gtest/gtest.h>

#include <vector>

#include "host_api.h"

namespace {

TEST(HookedHostApi, ADynamicInitialiserAndAStreamCastBackLinkAndRun) {
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  const std::vector<float> y = host_api::add_one_on_opaque_stream(x);
  ASSERT_EQ(y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] + 1) << i;
}

}  // namespace
