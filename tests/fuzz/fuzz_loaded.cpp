#include "fuzz_loaded.h"

#include <nlohmann/json.hpp>

#include "json_text.h"
#include "load_model.h"

namespace ds::fuzz {

void record_error(const ds::ref::ModelError& e) {
  (void)ds::trace::json_text(nlohmann::json{{"error", e.what()}});
}

void load_both(const std::string& spec) {
  try {
    const ds::ModelConfig c = ds::ref::load_config(spec);
    (void)ds::trace::json_text(nlohmann::json{{"name", c.name}, {"layers", c.n_layers}});
  } catch (const ds::ref::ModelError& e) {
    record_error(e);
  }
  try {
    const ds::Model m = ds::ref::load_model(spec);
    (void)ds::trace::json_text(nlohmann::json{{"name", m.config.name}, {"layers", m.config.n_layers}});
  } catch (const ds::ref::ModelError& e) {
    record_error(e);
  }
}

}  // namespace ds::fuzz
