// Every candidate Driftscope knows by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "candidate.h"
#include "plugin/plugin_library.h"

namespace ds {

struct CandidateEntry {
  std::string name;
  std::string description;
};

struct CandidateAlias {
  std::string alias, target;
};

// The built-in candidates.
std::vector<CandidateEntry> list_candidates();
// Other names make_candidate accepts for a built-in one (simt-gdn = simt, cuda-gdn = cuda where
// cuda is built): no candidate of their own, so listings and the gate show each once.
std::vector<CandidateAlias> list_candidate_aliases();
// A built-in name, a plugin spec ("[plugin:]PATH.so[:NAME]") or a Python candidate
// ("py:FILE.py[:NAME]"). Throws std::invalid_argument
// naming the known candidates when `name` is unknown, PluginError (an std::invalid_argument) for
// a file that is not a usable plugin, CandidateCrash when the plugin crashes while opened.
CandidatePtr make_candidate(std::string_view name);
// The candidate specs `spec` stands for: a plugin file without :NAME, every candidate it
// registers ("PATH.so:NAME" each); anything else, itself.
std::vector<std::string> expand_candidate_spec(std::string_view spec);
// The plugin file behind a candidate made by make_candidate (path, SHA-256, versions), or
// nullopt for a built-in one.
std::optional<PluginInfo> plugin_origin(const Candidate& cand);
// Why `--simt-memcheck` cannot look into the kernels of the built-in candidate `name`, or "" when
// it can or cannot tell before the run (a plugin): memcheck sees the loads and stores of kernels
// built CHECKED only (simt's own, a plugin's own or its STEM_checked.so twin's); a run that
// checked no launch says so.
std::string memcheck_blind_spot(std::string_view name);
// Whether `name` is a built-in candidate whose SIMT kernels never race between blocks (simt and its
// GDN variants: the hazard checker and schedule reruns pass them on every preset), so its launches
// may spread over host threads with the same bits.
bool simt_blocks_race_free(std::string_view name);
// Whether `spec` names code Driftscope did not write: a plugin (a bare .cu becomes one) or a Python
// candidate. Those are what `--sandbox` confines (sandbox.h); the built-in candidates, mutants and
// dumps are Driftscope's own, and may build a kernel module on first use.
bool runs_foreign_code(std::string_view spec);
// `--fill reference`: the candidate that computes the stages a partial candidate leaves out.
CandidatePtr make_fill_candidate(DType storage);

}  // namespace ds
