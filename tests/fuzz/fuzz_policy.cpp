// libFuzzer target: the policy parser (`--policy FILE.yaml`), then the parsed policy judging a few
// stages, which runs its stage regexes and predicates. Every input must end in a policy or a
// PolicyError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "policy.h"

namespace {

// One stage per judging path: model-level and layer stages, both modes, a present stage with and
// without a recorded noise floor, and a missing one.
std::vector<ds::StageResult> sample_stages() {
  std::vector<ds::StageResult> out;
  for (const char* stage : {"embed", "q_rope", "residual_2", "logits"})
    for (ds::Mode mode : {ds::Mode::isolated, ds::Mode::chained}) {
      ds::StageResult r;
      r.key.stage = stage;
      r.key.layer = std::string_view(stage) == "embed" || std::string_view(stage) == "logits" ? -1 : 1;
      r.mode = mode;
      r.status = ds::Status::pass;
      r.cand_dtype = ds::DType::f16;
      r.m.max_abs = 1e-3;
      r.m.ref_rms = 1;
      r.m.cosine = 0.999;
      if (mode == ds::Mode::chained) r.floor_max_abs = r.floor_rms = r.floor_mean_abs = 1e-4;
      out.push_back(r);
    }
  out.back().status = ds::Status::missing;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<ds::StageResult> stages = sample_stages();
  try {
    const ds::Policy policy = ds::Policy::from_yaml(std::string(ds::fuzz::as_text(data, size)), "fuzz.yaml");
    for (ds::StageResult r : stages) policy.judge(r);
  } catch (const ds::PolicyError&) {
  }
  return 0;
}
