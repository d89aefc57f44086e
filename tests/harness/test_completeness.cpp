// A weight file missing a required tensor is refused (exit 2) naming it, before any stage runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>

#include "loaders/gguf.h"
#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

TEST(CompletenessGate, GgufMissingQkNormIsRefusedNamingTheTensor) {
  Model m = ref::make_synthetic("qwen3-tiny", 0, 0);
  m.weights.erase("blk.1.attn_k_norm.weight");
  const auto path = std::filesystem::temp_directory_path() / fmt::format("ds_incomplete_{}.gguf", getpid());
  ref::write_gguf(m, path.string());

  std::vector<std::string> events;
  RunOptions o;
  o.model = path.string();
  o.candidate = "cpu-f16";
  o.on_event = [&](std::string_view e) { events.emplace_back(e); };
  try {
    run_parity(o, Policy::dtype_defaults());
    FAIL() << "expected the weight-completeness gate to refuse";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_k_norm.weight"), std::string::npos) << e.what();
  }
  for (const auto& e : events) {
    EXPECT_NE(e, "reference_layer");
    EXPECT_NE(e, "candidate_step");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ds
