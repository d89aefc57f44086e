// The runner leaves a stub trace when a run stops before any stage (trace_stub.h): refused by
// the capability gate, or stopped by bad input. The gate still refuses before any weight is read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>

#include "loaders/gguf.h"
#include "runner.h"
#include "synthetic.h"
#include "trace_reader.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

std::string tmp(const std::string& name) {
  return (fs::temp_directory_path() / fmt::format("ds_stopped_{}_{}", getpid(), name)).string();
}

TEST(StoppedTrace, GateRefusalLeavesATraceSayingWhyAndReadsNoWeight) {
  RunOptions o;
  o.model = "synthetic:qwen3-tiny";
  o.candidate = "cpu-f16-v1";
  o.trace_path = tmp("refused.h5");
  o.case_info = {{"index", 1}, {"of", 2}};
  std::vector<std::string> events;
  o.on_event = [&](std::string_view e) { events.emplace_back(e); };
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), GateRefusal);
  EXPECT_EQ(events, std::vector<std::string>{"gate"});

  const trace::TraceReader r(o.trace_path);
  EXPECT_TRUE(r.rows().empty());
  const trace::TraceCase& c = r.trace_case();
  EXPECT_TRUE(c.stopped_early());
  EXPECT_EQ(c.status, "refused");
  EXPECT_EQ(c.exit_code, kExitRefused);
  EXPECT_NE(c.reason.find("Missing:          [QkNorm]"), std::string::npos) << c.reason;
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.key(), "synthetic:qwen3-tiny x cpu-f16-v1 x seed 0");
  EXPECT_EQ((*r.result())["ops"]["missing"], "[QkNorm]");
  EXPECT_NE(r.run()["model"]["required_ops"].get<std::string>().find("QkNorm"), std::string::npos);
  EXPECT_EQ(r.run()["candidate"]["name"], "cpu-f16-v1");
  EXPECT_FALSE(r.run()["candidate"]["capabilities"].get<std::string>().empty());
  EXPECT_FALSE(r.attr("tool_version").empty());
  fs::remove(o.trace_path);
}

TEST(StoppedTrace, MissingModelFileLeavesABadInputTraceNamingIt) {
  RunOptions o;
  o.model = tmp("no-such-model.gguf");
  o.candidate = "cpu-f16";
  o.trace_path = tmp("bad.h5");
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
  const trace::TraceReader r(o.trace_path);
  const trace::TraceCase& c = r.trace_case();
  EXPECT_EQ(c.status, "bad-input");
  EXPECT_EQ(c.exit_code, kExitUsage);
  EXPECT_NE(c.reason.find(o.model), std::string::npos) << c.reason;
  EXPECT_EQ(c.model, o.model);  // the key survives: model_spec is known even without a config
  EXPECT_FALSE(r.run().contains("model"));
  EXPECT_EQ(r.run()["candidate"]["name"], "cpu-f16");
  fs::remove(o.trace_path);
}

TEST(StoppedTrace, GgufMissingATensorLeavesABadInputTraceNamingTheTensor) {
  Model m = ref::make_synthetic("qwen3-tiny", 0, 0);
  m.weights.erase("blk.1.attn_k_norm.weight");
  const std::string gguf = tmp("incomplete.gguf");
  ref::write_gguf(m, gguf);
  RunOptions o;
  o.model = gguf;
  o.candidate = "cpu-f16";
  o.trace_path = tmp("incomplete.h5");
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), InputError);
  const trace::TraceReader r(o.trace_path);
  EXPECT_EQ(r.trace_case().status, "bad-input");
  EXPECT_NE(r.trace_case().reason.find("blk.1.attn_k_norm.weight"), std::string::npos)
      << r.trace_case().reason;
  EXPECT_EQ(r.run()["model"]["n_layers"], m.config.n_layers);  // the header was read
  EXPECT_TRUE(r.rows().empty());
  fs::remove(gguf);
  fs::remove(o.trace_path);
}

TEST(StoppedTrace, AnUnwritableTracePathStillReportsTheRefusal) {
  RunOptions o;
  o.model = "synthetic:qwen3-tiny";
  o.candidate = "cpu-f16-v1";
  o.trace_path = tmp("no-such-dir") + "/x.h5";
  EXPECT_THROW(run_parity(o, Policy::dtype_defaults()), GateRefusal);
  EXPECT_FALSE(fs::exists(o.trace_path));
}

}  // namespace
}  // namespace ds
