// The stage catalog: canonical stage names per block kind. These names are the public
// contract of traces, policies and candidates' stage maps; they are defined only here.
#pragma once

#include <span>
#include <string_view>
#include <cstdint>
#include <regex>
#include <vector>

#include "model_config.h"
#include "ops.h"

namespace ds {

struct StageInfo {
  std::string_view name;
  std::string_view what;  // one line, shown in reports and the viewer
};

// Every stage a block kind can produce, in execution order.
std::span<const StageInfo> block_stages(BlockKind kind);
// The stages a given layer of a given model actually has (e.g. no q_norm without QK-norm).
// Layer -1 means the model-level stages (embed, final_norm, logits).
std::vector<std::string_view> stages_for(const ModelConfig& cfg, int layer);
// The stages a block of `kind` has in this model (the catalog, less what the model lacks).
std::vector<std::string> expected_stages(const ModelConfig& cfg, BlockKind kind);
const StageInfo* find_stage(BlockKind kind, std::string_view name);
// The ops computing `stage` of a block of `kind` may exercise (a superset: intersect with the
// model's required ops). The gate of a partial candidate asks only for the ops of the stages
// the candidate computes itself.
OpSet stage_ops(BlockKind kind, std::string_view stage);
// Model-level stages live at this layer index in results and traces.
inline constexpr int kModelLayer = -1;
// Whether `name` is a stage of any block kind: what a trace's row must name.
bool is_catalog_stage(std::string_view name);
// Whether `stage` is one of a mixture-of-experts layer's stages (router_logits .. moe_out).
bool is_moe_stage(std::string_view stage);
// Whether `stage` is one of the shared expert's (shexp_out, shexp_gate, ffn_out; Qwen3-Next).
// How many adjacent columns of `stage` one head fills in layer `layer` (head_dim for the
// projections and attention stages, a GDN head's key or value width for its per-head stages), or 0
// for a stage that is not laid out by heads.
int stage_head_width(const ModelConfig& cfg, int layer, std::string_view stage);
bool is_shared_expert_stage(std::string_view stage);
// Whether `stage` holds discrete decisions (a MoE router's expert_ids), compared exactly under
// every policy: a near miss is a different decision, not a rounding error.
bool is_discrete_stage(std::string_view stage);
// Whether `stage` is one of the model-level stages (the embed and head blocks' stages).
bool is_model_level_stage(std::string_view stage);
// The longest regex over stage names a policy rule or --capture-stages may give. std::regex
// compiles and matches by recursion, one level per term: a pattern of 100000 characters
// overflows the stack. Stage names are short; a list of every catalog stage fits many times.
inline constexpr std::size_t kMaxStagePatternChars = 1000;
// Largest number a stage pattern's {n} / {n,m} or backreference \n may hold: libstdc++ compiles a
// repeat by copying the state machine n times, and reads these numbers with no overflow check.
inline constexpr std::uint64_t kMaxStagePatternNumber = 1000;
// A stage regex (policy rules, --capture-stages, export --stages), bounded before libstdc++ sees it.
// Throws std::invalid_argument saying what is wrong (too long, a repeat count too large, or not a
// valid regex); callers add which option or file it came from.
std::regex compile_stage_pattern(const std::string& pattern);

}  // namespace ds
