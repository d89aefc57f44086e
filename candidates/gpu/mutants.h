// The mutants: the real kernels with one planted bug each, and where the harness must
// first catch each one (docs/mutants.md has the same table with the reasoning).
#pragma once

#include <span>
#include <string_view>

namespace ds::gpu {

struct MutantInfo {
  std::string_view name;         // registry name without "mutant:"
  int bug;                       // dsk::Bug
  std::string_view model;        // the model it is caught on
  std::string_view first_stage;  // first failing stage (catalog name)
  int first_layer;               // its layer
  std::string_view mode;         // "isolated"
  std::string_view policy;       // "default" or "strict" (see docs/mutants.md)
  std::string_view what;         // the bug in one line
};

std::span<const MutantInfo> mutants();

}  // namespace ds::gpu
