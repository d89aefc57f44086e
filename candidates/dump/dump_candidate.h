// `--candidate dump:DIR[:MAPPING]`: an engine judged from the stage tensors it dumped
// (docs/dumps.md). Nothing is computed: each step of its plan reads one stage of one layer at
// one model step from the dump, through the mapping (DIR/mapping.yaml unless named), and brings
// it to the catalog's layout. Stages the mapping does not name are absent from the plan (the
// runner records them `missing`); stages it declares `absent` are computed by the reference fill.
// Only chained mode is meaningful: the engine fed itself.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "candidate.h"
#include "dump_mapping.h"
#include "tensor_files.h"

namespace ds::dump {

inline constexpr std::string_view kDumpPrefix = "dump:";
// "dump:DIR" or "dump:DIR:MAPPING.yaml" as (DIR, mapping path); nullopt when not a dump spec.
// `mapping` is empty when none is named and DIR has no mapping.yaml: the candidate then chooses
// a shipped one by the engine that wrote DIR and the model's family (settle()).
struct DumpSpec {
  std::string dir, mapping;
};
std::optional<DumpSpec> parse_dump_spec(std::string_view spec);

class DumpCandidate final : public Candidate {
 public:
  explicit DumpCandidate(const DumpSpec& spec);  // reads the mapping; throws DumpError

  std::string name() const override { return name_; }
  std::string description() const override;
  DType storage_dtype() const override { return mapping_ ? mapping_->storage : DType::f32; }
  // Every op: the engine that wrote the dump computed them all; the harness asks none of it.
  OpSet capabilities() const override;
  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

  // Chooses the shipped mapping for this model when the spec named none (idempotent); returns a
  // sentence saying which, or "" when the mapping was the user's. Throws DumpError when none fits.
  std::string settle(const ModelConfig& cfg) const;
  const Mapping& mapping() const;
  // The prompt the dump carries (its tokens file), checked; nullopt when it carries none.
  std::optional<std::vector<int>> tokens() const;
  // The token the engine chose after each model step (DIR/greedy.txt, comma-separated ids, as
  // tools/llama_dump writes it); empty when the dump has none. Throws DumpError on a bad file.
  std::vector<int> engine_choices() const;
  // Reads every header the run will need, before anything is computed: each (step, layer,
  // stage) file and tensor exists and has rows of the right shape. `steps` holds (pos0, tokens)
  // per model step. Throws DumpError naming the file and the tensor.
  void preflight(const ModelConfig& cfg, const std::vector<std::pair<int, int>>& steps) const;
  // The mapped stages the dump lacks a source of at some step of a run of `steps` model steps (the
  // file is not there, or a file that opens has no such tensor), in the order the run reads them,
  // each with the first source missing ("PATH (stage S, layer L, step N)"). Corrupt files are not
  // looked into here: preflight() names them.
  std::vector<std::pair<std::string, std::string>> missing_sources(const ModelConfig& cfg, int steps) const;
  // Leaves `stage` out of the plan, as a mapping that does not map it would (--fill reference then
  // fills it: recorded `filled`, never judged).
  void unmap(const std::string& stage) const;
  // The file and tensor `stage` of `layer` at `step` is read from, for messages; "" when unmapped.
  std::string source_of(const std::string& stage, int step, int layer) const;

 private:
  const TensorFile& file(const std::string& path) const;
  // Where `stage` of `layer` at `step` lives: (file path, tensor name, a phrase for messages).
  struct Where {
    std::string path, tensor, what;
  };
  Where where(const std::string& stage, int step, int layer) const;
  // `storage: auto`: the float dtype the dump stores its activations in.
  DType stored_dtype() const;
  void settle_storage() const;  // resolves `storage: auto` once the mapping is known
  Tensor fetch(const ModelConfig& cfg, const std::string& stage, int step, int layer, int pos0, int n_tokens,
               bool header_only) const;

  std::string name_, dir_;
  mutable std::optional<Mapping> mapping_;  // unset until settle() when the spec named none
  mutable std::string chosen_;              // what a file error adds when settle() chose the mapping
  mutable std::map<std::string, std::unique_ptr<TensorFile>> files_;
};

}  // namespace ds::dump
