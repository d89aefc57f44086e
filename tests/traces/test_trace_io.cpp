// The trace format: round trip of every row field, and clear errors (never a crash) for a
// non-trace file, a newer schema and a truncated file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "h5_util.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace ds::trace {
namespace {

namespace fs = std::filesystem;

fs::path tmp(const std::string& name) {
  return fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
}

std::string open_error(const fs::path& p) {
  try {
    TraceReader r(p.string());
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

StageResult sample(int layer, Status s) {
  StageResult r;
  r.key = {1, layer, "attn_out"};
  r.mode = Mode::chained;
  r.status = s;
  r.cand_dtype = DType::f16;
  r.shape = {2, 3};
  r.m.numel = 6;
  r.m.max_abs = 0.5;
  r.m.max_abs_index = 4;
  r.m.ulp_hist[3] = 6;
  r.m.first_nan = -1;
  r.floor_max_abs = 0.25;
  r.floor_rms = 0.125;
  r.floor_mean_abs = 0.0625;
  r.cand_hash = 0xfedcba9876543210ull;
  r.expected = s == Status::missing;
  r.note = "why";
  r.per_token_rel = {0.1, 0.2};
  return r;
}

void write_sample(const fs::path& p, WriterOptions opt = {}) {
  TraceWriter w(p.string(), {{"tool_version", "t"}}, {{"model", {{"name", "m"}}}}, opt);
  const Tensor ref = Tensor::from_f64({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  const Tensor cand = Tensor::from_f64({2, 3}, std::vector<double>{1, 2, 3, 4, 5.5, 6});
  w.append(sample(0, Status::fail), &ref, &cand);
  w.flush();
  w.append(sample(1, Status::missing), &ref, nullptr);
  w.flush();
  w.finish({{"exit_code", 1}});
}

TEST(TraceIo, RoundTripsEveryNewField) {
  const fs::path p = tmp("rt.h5");
  write_sample(p);
  TraceReader r(p.string());
  EXPECT_EQ(r.version(), kVersion);
  EXPECT_EQ(r.attr("schema"), kSchema);
  EXPECT_EQ(r.attr("tool_version"), "t");
  ASSERT_EQ(r.rows().size(), 2u);
  const StageResult& a = r.rows()[0].result;
  EXPECT_EQ(a.key, (StageKey{1, 0, "attn_out"}));
  EXPECT_EQ(a.status, Status::fail);
  EXPECT_EQ(a.mode, Mode::chained);
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(a.floor_max_abs, 0.25);
  EXPECT_EQ(a.floor_rms, 0.125);
  EXPECT_EQ(a.floor_mean_abs, 0.0625);
  EXPECT_EQ(a.cand_hash, 0xfedcba9876543210ull);
  EXPECT_EQ(a.m.ulp_hist[3], 6);
  EXPECT_FALSE(a.expected);
  EXPECT_TRUE(r.rows()[1].result.expected);
  EXPECT_EQ(r.cand_tensor(r.rows()[0]).at(4), 5.5);
  EXPECT_EQ(r.per_token(r.rows()[0]), (std::vector<double>{0.1, 0.2}));
  EXPECT_FALSE(r.has_tensors(r.rows()[1]));
  ASSERT_TRUE(r.result());
  EXPECT_EQ((*r.result())["exit_code"], 1);
  fs::remove(p);
}

TEST(TraceIo, CaptureFilterKeepsRowsButOnlyMatchingTensors) {
  const fs::path p = tmp("filter.h5");
  write_sample(p, {Capture::all, "q|k", -1, 1 << 30});
  TraceReader r(p.string());
  ASSERT_EQ(r.rows().size(), 2u);
  EXPECT_FALSE(r.has_tensors(r.rows()[0]));  // attn_out does not match q|k
  const fs::path p2 = tmp("filter2.h5");
  write_sample(p2, {Capture::all, "", 0, 0});
  TraceReader r2(p2.string());
  EXPECT_TRUE(r2.has_tensors(r2.rows()[0]));  // layer 0 kept
  fs::remove(p);
  fs::remove(p2);
}

TEST(TraceIo, NonTraceFilesGiveClearErrors) {
  const fs::path text = tmp("text.h5");
  std::ofstream(text) << "hello, not HDF5\n";
  EXPECT_NE(open_error(text).find("not an HDF5 file"), std::string::npos);
  EXPECT_NE(open_error(tmp("absent.h5")).find("no such trace file"), std::string::npos);
  // An HDF5 file that is not a trace.
  const fs::path plain = tmp("plain.h5");
  H5Fclose(H5Fcreate(plain.string().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  EXPECT_NE(open_error(plain).find("not a Driftscope trace"), std::string::npos);
  fs::remove(text);
  fs::remove(plain);
}

TEST(TraceIo, NewerSchemaIsRefused) {
  const fs::path p = tmp("newer.h5");
  write_sample(p);
  const hid_t f = H5Fopen(p.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
  const int v = kVersion + 1;
  H5Awrite(a, H5T_NATIVE_INT, &v);
  H5Aclose(a);
  H5Fclose(f);
  EXPECT_NE(open_error(p).find("newer than this driftscope reads"), std::string::npos) << open_error(p);
  fs::remove(p);
}

TEST(TraceIo, TruncatedFilesGiveAnErrorNotACrash) {
  const fs::path p = tmp("full.h5");
  write_sample(p);
  const auto size = fs::file_size(p);
  for (double frac : {0.9, 0.5, 0.1, 0.01}) {
    const fs::path t = tmp("trunc.h5");
    fs::copy_file(p, t, fs::copy_options::overwrite_existing);
    fs::resize_file(t, std::uintmax_t(double(size) * frac));
    const std::string err = open_error(t);
    EXPECT_FALSE(err.empty()) << frac;  // through the CLI: test_diff_report's ReportTest
    fs::remove(t);
  }
  fs::remove(p);
}

// The guard turns a fault inside the HDF5 library into "corrupt trace", exit 2 (traces.hostile
// shows that on real corrupt heaps); a fault in any other code under a guard is a bug and must
// still crash, or fuzzers and sanitizers would read it as a handled corrupt file.
TEST(ReadGuard, AFaultOutsideHdf5StillCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const ReadGuard guard("guarded.h5");
        volatile std::uintptr_t address = 8;  // not a null constant: the compiler must emit the store
        *reinterpret_cast<volatile int*>(address) = 1;
      },
      [](int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 2); },
      testing::Not(testing::HasSubstr("corrupt trace")));
}

}  // namespace
}  // namespace ds::trace
