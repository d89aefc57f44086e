// `verify --candidate FILE.cu --stage-map MAP`: a kernel file as a code generator writes it, with
// a small YAML map saying which scaffold kind glues it into a model and which of its host
// functions is the entry point. Driftscope writes the `new-candidate` project of that kind around
// the file (in place: the file is never written), builds it against the SDK this driftscope is
// installed with, and the built plugin is then the candidate (docs/verify.md).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ds::cli {

// The stage map: `kind` (a scaffold kind, scaffold_kinds()), `entry` (the host function of the
// .cu with that kind's signature) and optionally `dtype` (f32, or f16 for the kinds with an f16
// variant: the entry takes __half pointers). Anything else in it is an error.
struct StageMap {
  std::string path, kind, entry, dtype = "f32";
  // `include_dirs`: the repository's own header directories (-I), absolute, each one that exists.
  std::vector<std::string> include_dirs;
};
// An InputError naming the file and the field for anything wrong.
StageMap read_stage_map(const std::string& path);

// A candidate argument that is a kernel file rather than a built-in or a plugin.
bool is_kernel_file(const std::string& candidate);

// The map of `--candidate FILE.cu --stage-map MAP`; nullopt for any other candidate. A .cu
// without a map, or a map with another candidate, is an InputError.
std::optional<StageMap> stage_map_for(const std::string& candidate, const std::string& stage_map);

// A bare .cu computes one kind of stage and can never produce the others: without a --fill of the
// user's (`fill_given` false), `fill` becomes "reference" and a line says so, so that the coverage
// gate does not refuse the model only after the build. An explicit `--fill none` stands.
void default_fill_for_kernel_file(const std::string& cu, const StageMap& map, std::string& fill,
                                  bool fill_given);

// A bare .cu computes its kind's stages only: without a --model of the user's (`model_given`
// false), `model` becomes the kind's own preset (one whose model has those stages), and a line says so.
void model_for_kernel_file(const std::string& cu, const StageMap& map, std::string& model, bool model_given);

struct BareCandidate {
  std::string source;  // the .cu, absolute
  StageMap map;
  std::string project;  // the generated project
  std::string plugin;   // the plugin it built: what runs as the candidate
};

// Writes the project of map.kind around `cu` into `dir` and builds it (cmake, the CUDA flavour
// off). An InputError for anything that stops it: no installed SDK, no cmake, a compile or link
// error (with the build log's relevant lines, which name the .cu's own file:line). `dir_kept`:
// whether `dir` outlives the command (the message then points at the whole log).
BareCandidate build_bare_candidate(const std::string& cu, const StageMap& map,
                                   const std::filesystem::path& dir, bool dir_kept);

// What a verdict records of it: the .cu's absolute path, the kind, the entry, and the plugin's
// path when `kept` (null when it was built in a temporary directory, removed at the end).
nlohmann::json candidate_build_json(const BareCandidate& b, bool kept);

}  // namespace ds::cli
