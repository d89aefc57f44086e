// Every candidate Driftscope knows by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"

namespace ds {

struct CandidateEntry {
  std::string name;
  std::string description;
};

std::vector<CandidateEntry> list_candidates();
// Throws std::invalid_argument naming the known candidates when `name` is unknown.
CandidatePtr make_candidate(std::string_view name);

}  // namespace ds
