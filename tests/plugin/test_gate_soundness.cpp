// A gate that never lies: for every built-in candidate, synthetic preset and fused GDN variant
// the gate passes, the candidate's plans produce every stage the reference computes for that
// model (found by running the reference, not from the catalog the gate itself reads). A false
// PASS, the permissive supports_op hazard, fails the build.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "gate.h"
#include "reference.h"
#include "registry.h"
#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

// Every stage the reference computes for a preset: embed, each block kind's first layer, head.
std::set<std::pair<BlockKind, std::string>> reference_stages(const std::string& preset) {
  const ModelConfig full = ref::synthetic_config(preset);
  // Enough layers to meet every block kind, but no more (real-shape presets are large).
  int layers = 1;
  std::set<BlockKind> kinds;
  for (BlockKind k : full.layer_kinds) kinds.insert(k);
  for (std::set<BlockKind> seen; layers <= full.n_layers; ++layers) {
    seen.insert(full.block_kind(layers - 1));
    if (seen == kinds) break;
  }
  const Model model = ref::make_synthetic(preset, 0, layers);
  ref::Reference r(model);
  std::set<std::pair<BlockKind, std::string>> out;
  const std::vector<std::int32_t> tokens = {1, 2};
  for (const auto& [name, t] : r.embed(tokens, 0)) out.insert({BlockKind::embed, name});
  Tensor x = r.embed(tokens, 0).at("embed");
  for (int l = 0; l < layers; ++l) {
    const TensorMap s = r.layer(l, x, 0);
    for (const auto& [name, t] : s) out.insert({model.config.block_kind(l), name});
    x = s.at("residual_2");
  }
  for (const auto& [name, t] : r.head(x)) out.insert({BlockKind::head, name});
  return out;
}

TEST(GateSoundness, EveryPassedCandidateProducesEveryStageTheReferenceComputes) {
  int passed = 0, refused = 0;
  for (const std::string& preset : ref::synthetic_presets()) {
    const ModelConfig base = ref::synthetic_config(preset);
    // Real-shape presets: the same stages as their tiny relatives, at a cost; the tiny ones cover
    // every family and block kind.
    if (base.hidden > 1024) continue;
    const auto stages = reference_stages(preset);
    std::vector<std::string> variants = {"plain"};
    if (base.family == Family::qwen35) variants = {"plain", "inplace", "ids", "conv-update", "conv-update-ids"};
    for (const std::string& variant : variants) {
      ModelConfig cfg = base;
      cfg.gdn_fused = gdn_variant_ops(variant);
      for (const auto& e : list_candidates()) {
        const CandidatePtr c = make_candidate(e.name);
        const GateAnswer a = gate_candidate(cfg, *c, false);
        if (!a.pass) {
          ++refused;
          continue;
        }
        ++passed;
        std::set<std::pair<BlockKind, std::string>> made;
        for (BlockKind k : {BlockKind::embed, BlockKind::head, BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn,
                            BlockKind::gated_attn})
          for (const KernelStep& s : c->plan(cfg, k))
            for (const std::string& o : s.outputs) made.insert({k, o});
        for (const auto& st : stages)
          EXPECT_TRUE(made.count(st)) << fmt::format("gate PASS for {} on {} (--gdn-variant {}), but no step produces {} of {}",
                                                     e.name, preset, variant, st.second, block_kind_name(st.first));
      }
    }
  }
  EXPECT_GT(passed, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace ds
