#include "registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <stdexcept>

#include "cpu/cpu_candidate.h"

namespace ds {

namespace {
struct Factory {
  std::string_view name;
  std::function<CandidatePtr()> make;
};

const std::vector<Factory>& factories() {
  static const std::vector<Factory> f = {
      {"cpu-f16", [] { return std::make_unique<cpu::CpuCandidate>(); }},
      {"cpu-f16-v1", [] { return cpu::CpuCandidate::v1_ops(); }},
      {"mutant:chain-add-idx", [] { return std::make_unique<cpu::CpuCandidate>(cpu::PlantedBug::chain_add_idx); }},
      {"selftest:segv-layer1", [] { return std::make_unique<cpu::CpuCandidate>(cpu::PlantedBug::segv_at_layer1); }},
      {"selftest:abort-layer1", [] { return std::make_unique<cpu::CpuCandidate>(cpu::PlantedBug::abort_at_layer1); }},
      {"selftest:hang-layer1", [] { return std::make_unique<cpu::CpuCandidate>(cpu::PlantedBug::hang_at_layer1); }},
  };
  return f;
}
}  // namespace

std::vector<CandidateEntry> list_candidates() {
  std::vector<CandidateEntry> out;
  for (const auto& f : factories()) out.push_back({std::string(f.name), f.make()->description()});
  return out;
}

CandidatePtr make_candidate(std::string_view name) {
  std::vector<std::string_view> known;
  for (const auto& f : factories()) {
    if (f.name == name) return f.make();
    known.push_back(f.name);
  }
  throw std::invalid_argument(fmt::format("unknown candidate '{}' (known: {})", name, fmt::join(known, ", ")));
}

}  // namespace ds
