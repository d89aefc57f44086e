#include "run_state.h"

#include <fmt/format.h>

#include "run_json.h"

namespace ds {

nlohmann::json RunState::run_json(const ModelConfig* cfg) const {
  nlohmann::json j = ds::run_json(opt, policy, cfg, candidate_json, features.baseline.json());
  if (features.batch.active()) j["batch"] = features.batch.json();
  return j;
}

void RunState::open_trace(const ModelConfig& cfg) {
  try {
    trace = std::make_unique<trace::TraceWriter>(
        opt.trace_path, trace_root_json(opt), run_json(&cfg),
        trace::WriterOptions{opt.capture, opt.capture_stages, opt.capture_layer_min, opt.capture_layer_max});
  } catch (const trace::TraceError& e) {
    throw InputError(e.what());
  }
}

std::string RunState::crasher(const CandidateCrash& crash) const {
  if (!dynamic_cast<const BaselineCrash*>(&crash)) return "candidate";
  return fmt::format("baseline {}", features.baseline.name(opt));
}

}  // namespace ds
