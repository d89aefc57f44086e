// A faster kernel must compute what the slower one did: this test pins the content hash of every
// stage tensor `simt` produces (isolated and chained, a 7-token prefill and two decode steps) to
// hashes recorded by an earlier build (fixtures/golden/simt_stage_hashes.txt), on every tiny
// preset, on one layer of a real-shape preset (width 896, 151936-row lm_head), and under the
// mutants whose planted bug lives in the GEMV kernels. After a deliberate change of a kernel's
// arithmetic, rewrite the fixture with DRIFTSCOPE_WRITE_GOLDEN=1 and say why in the commit.
//
// Not pinned: mutant:gemv-warps, whose missing warps leave output rows and the epilogue's shared
// partials unwritten, so those bits are whatever an earlier launch left behind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

const std::string kFixture = std::string(DRIFTSCOPE_FIXTURES_DIR) + "/golden/simt_stage_hashes.txt";

struct GoldenCase {
  std::string name;  // the fixture's key prefix and the test's name
  std::string model, candidate;
  int layers = 0;  // 0: every layer
  int prompt_tokens = 7;
  int decode_steps = 2;
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::vector<GoldenCase> cases() {
  std::vector<GoldenCase> out;
  for (const std::string& p : ref::synthetic_presets())
    if (ref::synthetic_config(p).hidden <= 1024 && ref::synthetic_config(p).vocab <= 1024)
      out.push_back({"simt_" + p, "synthetic:" + p, "simt"});
  for (const char* m :
       {"chain-add-idx", "chain-add-rz", "dim-flip", "gemv-no-tail", "gemv-half-accum", "half-before-bias"})
    out.push_back({fmt::format("mutant_{}", m), "synthetic:qwen2-tiny", fmt::format("mutant:{}", m)});
  // A 150-token prefill: attention's later queries score their keys in several passes of 32 per
  // warp, and the GEMVs serve 18 full token groups and a partial one.
  out.push_back({"simt_qwen2-tiny_long", "synthetic:qwen2-tiny", "simt", 0, 150, 1});
  // A prefill of 5: not a whole number of any token group a GEMV might serve at once.
  out.push_back({"simt_qwen2.5-0.5b_l1", "synthetic:qwen2.5-0.5b", "simt", 1, 5, 1});
  return out;
}

std::string test_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

using Hashes = std::map<std::string, std::string>;

Hashes run_case(const GoldenCase& c) {
  RunOptions o;
  o.model = c.model;
  o.candidate = c.candidate;
  o.layers = c.layers;
  o.modes = {Mode::isolated, Mode::chained};
  o.prompt_tokens = c.prompt_tokens;
  o.decode_steps = c.decode_steps;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  Hashes out;
  for (const StageResult& s : r.results)
    if (s.cand_hash != 0)
      out[fmt::format("{} {} {} {} {}", c.name, mode_name(s.mode), s.key.step, s.key.layer, s.key.stage)] =
          fmt::format("{:016x}", s.cand_hash);
  return out;
}

Hashes read_fixture(const std::string& prefix) {
  Hashes h;
  std::ifstream in(kFixture);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(prefix + ' ', 0) != 0) continue;
    const auto cut = line.rfind(' ');
    h[line.substr(0, cut)] = line.substr(cut + 1);
  }
  return h;
}

// DRIFTSCOPE_WRITE_GOLDEN=1 with --gtest_filter on one case would drop the others: the writer
// always runs every case.
TEST(GoldenSimt, WriteFixtureWhenAsked) {
  if (!std::getenv("DRIFTSCOPE_WRITE_GOLDEN")) GTEST_SKIP() << "DRIFTSCOPE_WRITE_GOLDEN is not set";
  Hashes all;
  for (const GoldenCase& c : cases()) all.merge(run_case(c));
  std::ofstream out(kFixture);
  out << "# content_hash of every stage simt produces: tests/candidates/test_golden_simt.cpp\n";
  for (const auto& [key, hash] : all) out << key << ' ' << hash << '\n';
  fmt::print("wrote {} hashes to {}\n", all.size(), kFixture);
}

class GoldenSimt : public testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenSimt, EveryStageKeepsItsRecordedBits) {
  if (std::getenv("DRIFTSCOPE_WRITE_GOLDEN")) GTEST_SKIP() << "writing the fixture instead";
  const GoldenCase& c = GetParam();
  const Hashes golden = read_fixture(c.name);
  ASSERT_FALSE(golden.empty()) << "no hashes for " << c.name << " in " << kFixture;
  const Hashes now = run_case(c);
  EXPECT_EQ(now.size(), golden.size());
  int differing = 0;
  for (const auto& [key, hash] : golden) {
    const auto it = now.find(key);
    if (it == now.end()) {
      ADD_FAILURE() << "not produced: " << key;
    } else if (it->second != hash && ++differing <= 20) {
      ADD_FAILURE() << key << ": " << it->second << ", recorded " << hash;
    }
  }
  EXPECT_EQ(differing, 0) << "stage tensors whose bits changed";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenSimt, testing::ValuesIn(cases()),
                         [](const auto& info) { return test_name(info.param.name); });

}  // namespace
}  // namespace ds
