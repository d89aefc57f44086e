// The templates of `driftscope new-candidate`, compiled into the program (harness/cli/scaffold/),
// and the kinds of kernel they glue into a model: `new-candidate` writes a project from them, and
// `verify --candidate FILE.cu --stage-map MAP` writes one around the user's own file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds::cli {

struct ScaffoldFile {
  std::string_view name;  // e.g. "rmsnorm.cu", "CMakeLists.txt.in"
  std::string_view text;  // with @NAME@, @CANDIDATE@, @KERNEL@, @SDK_VERSION@, @PREFIX@ to substitute
};
const std::vector<ScaffoldFile>& scaffold_files();

// One kind of kernel the scaffold glues into a model: the stages its candidate produces, the
// host entry point its candidate.cpp calls (the kernel file's `<kind>_forward`), and a tiny
// synthetic preset whose model has those stages (what the new project's commands run it on).
struct ScaffoldKind {
  std::string_view name;       // "rmsnorm"
  std::string_view stages;     // "attn_norm, ffn_norm"
  std::string_view signature;  // with NAME where the function's name goes
  std::string_view model;      // "synthetic:qwen2-tiny"
  // The f16 variant's signature (`dtype: f16` in a stage map: the kernel's activations and
  // weights as __half), or empty where the kind has none.
  std::string_view signature_f16;
};
const std::vector<ScaffoldKind>& scaffold_kinds();
// The kind of that name, or nullptr.
const ScaffoldKind* find_scaffold_kind(std::string_view name);

// A CMake target and C identifier from a directory's or file's name: "My-RMSNorm" -> "my_rmsnorm";
// a name CMake reserves gets a suffix ("clean" -> "clean_kernel").
std::string scaffold_project_name(std::string_view base);
// The candidate's registered name from the project's: "my_rmsnorm" -> "my-rmsnorm".
std::string scaffold_candidate_name(std::string_view project);
// "rmsnorm (attn_norm, ffn_norm), gemv (down), ...": the kinds and their stages, for help texts.
std::string scaffold_kinds_text();
// "rmsnorm, gemv, ...": the kinds' names, for messages; `f16_only`: those with an f16 variant.
std::string scaffold_kind_names(bool f16_only = false);

// The template `name` with every @KEY@ of `vars` replaced: @NAME@ (CMake target, C identifier),
// @CANDIDATE@, @KERNEL@ (the kind), @KERNEL_SOURCE@ (the kernel file as CMake names it), @ENTRY@
// and @UNAVAILABLE@ (the kernel file's host functions), @MODEL@ (the kind's preset), @ELEM@ and
// @ELEM_HEADER@ (the element type of the entry's pointers, float or __half, and the header that
// declares it), @SDK_VERSION@, @PREFIX@.
using ScaffoldVars = std::vector<std::pair<std::string, std::string>>;
std::string scaffold_text(std::string_view name, const ScaffoldVars& vars);

}  // namespace ds::cli
