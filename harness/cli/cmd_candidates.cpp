// driftscope candidates: every registered candidate with its storage dtype and capabilities.
#include <fmt/format.h>

#include "commands.h"
#include "registry.h"

namespace ds::cli {

void add_candidates_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("candidates", "List the registered candidates and their capabilities");
  cmd->callback([&exit_code] {
    for (const auto& e : list_candidates()) {
      const CandidatePtr c = make_candidate(e.name);
      fmt::print("{}\n  {}\n  storage: {}\n  capabilities: {}\n", e.name, e.description,
                 dtype_name(c->storage_dtype()), c->capabilities().str());
    }
    exit_code = 0;
  });
}

}  // namespace ds::cli
