// The oracle's results are the contract every candidate is judged against, so a speed-up of the
// reference must not move a single bit. This test pins the content hash of every stage tensor
// the reference computes on a handful of presets (the oracle, and noise floors) to hashes
// recorded by an earlier build (fixtures/golden/reference_stage_hashes.txt). After a deliberate
// change of the reference's math, rewrite the fixture with DRIFTSCOPE_WRITE_GOLDEN=1 and say why
// in the commit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "metrics.h"
#include "reference.h"
#include "synthetic.h"

namespace ds::ref {
namespace {

const std::string kFixture = std::string(DRIFTSCOPE_FIXTURES_DIR) + "/golden/reference_stage_hashes.txt";

struct Case {
  const char* name;
  const char* preset;
  int layers;     // 0: every layer of the preset
  DType weights;  // every weight converted to this (f32: as generated)
  DType storage;  // f64: the oracle; else a noise floor
};

// The tiny presets are generated in f32; converting exercises the 16-bit weight paths of
// `linear`. qwen2.5-0.5b is generated in bf16 at its real shapes (896 x 4864, vocab 151936).
const Case kCases[] = {
    {"qwen2-tiny/f32/oracle", "qwen2-tiny", 0, DType::f32, DType::f64},
    {"qwen2-tiny/f16/oracle", "qwen2-tiny", 0, DType::f16, DType::f64},
    {"qwen2-tiny/f16/floor-f16", "qwen2-tiny", 0, DType::f16, DType::f16},
    {"llama-tiny/bf16/oracle", "llama-tiny", 0, DType::bf16, DType::f64},
    {"llama-tiny/bf16/floor-bf16", "llama-tiny", 0, DType::bf16, DType::bf16},
    {"gpt2-tiny/f32/oracle", "gpt2-tiny", 0, DType::f32, DType::f64},
    {"gpt2-tiny/f16/floor-f16", "gpt2-tiny", 0, DType::f16, DType::f16},
    {"qwen35-tiny/bf16/oracle", "qwen35-tiny", 0, DType::bf16, DType::f64},
    {"qwen2.5-0.5b-l1/bf16/oracle", "qwen2.5-0.5b", 1, DType::f32, DType::f64},
    {"qwen2.5-0.5b-l1/bf16/floor-f16", "qwen2.5-0.5b", 1, DType::f32, DType::f16},
};

// A 7-token prefill (a multiple of 4 plus a remainder, for kernels that block token rows),
// then two single-token decode steps.
const std::vector<std::vector<std::int32_t>> kSteps = {{5, 17, 42, 7, 99, 3, 250}, {11}, {128}};

std::shared_ptr<const Model> model_of(const Case& c) {
  Model m = make_synthetic(c.preset, 3, c.layers);
  if (c.weights != DType::f32) {
    WeightStore converted;
    for (const auto& [name, t] : m.weights.all()) converted.put(name, t.to(c.weights));
    m.weights = std::move(converted);
  }
  return std::make_shared<const Model>(std::move(m));
}

// "case step where stage" -> hash, for every stage tensor of every step.
using Hashes = std::map<std::string, std::string>;

void record(Hashes& out, const Case& c, std::size_t step, const std::string& where, const TensorMap& stages) {
  for (const auto& [stage, t] : stages)
    out[fmt::format("{} {} {} {}", c.name, step, where, stage)] = fmt::format("{:016x}", content_hash(t));
}

Hashes run_case(const Case& c) {
  const auto model = model_of(c);
  Reference ref(model, {c.storage, false});
  Hashes out;
  for (std::size_t s = 0; s < kSteps.size(); ++s) {
    const int pos0 = ref.positions();
    const TensorMap e = ref.embed(kSteps[s], pos0);
    record(out, c, s, "embed", e);
    Tensor x = e.at("embed");
    for (int l = 0; l < model->config.n_layers; ++l) {
      const TensorMap stages = ref.layer(l, x, pos0);
      record(out, c, s, fmt::format("layer{}", l), stages);
      x = stages.at("residual_2");
    }
    record(out, c, s, "head", ref.head(x));
  }
  return out;
}

Hashes read_fixture() {
  Hashes h;
  std::ifstream in(kFixture);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto cut = line.rfind(' ');
    h[line.substr(0, cut)] = line.substr(cut + 1);
  }
  return h;
}

TEST(GoldenHashes, EveryStageOfTheReferenceKeepsItsRecordedBits) {
  Hashes now;
  for (const Case& c : kCases) now.merge(run_case(c));
  if (std::getenv("DRIFTSCOPE_WRITE_GOLDEN")) {
    std::ofstream out(kFixture);
    out << "# content_hash of every reference stage: tests/reference/golden_hashes_test.cpp\n";
    for (const auto& [key, hash] : now) out << key << ' ' << hash << '\n';
    GTEST_SKIP() << "wrote " << now.size() << " hashes to " << kFixture;
  }
  const Hashes golden = read_fixture();
  ASSERT_FALSE(golden.empty()) << "no fixture at " << kFixture;
  EXPECT_EQ(now.size(), golden.size());
  int differing = 0;
  for (const auto& [key, hash] : golden) {
    const auto it = now.find(key);
    if (it == now.end()) {
      ADD_FAILURE() << "not computed: " << key;
    } else if (it->second != hash && ++differing <= 20) {
      ADD_FAILURE() << key << ": " << it->second << ", recorded " << hash;
    }
  }
  EXPECT_EQ(differing, 0);
}

}  // namespace
}  // namespace ds::ref
