// driftscope gate --model M: for every registered candidate, may it serve M (seeds/000's
// architecture matrix)? Reads only the model's configuration.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "contracts.h"
#include "registry.h"
#include "runner.h"

namespace ds::cli {

void add_gate_command(CLI::App& app, int& exit_code) {
  auto model = std::make_shared<std::string>();
  auto candidate = std::make_shared<std::string>();
  auto gdn_variant = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "gate", "Show which candidates can serve a model (capability gate), without computing anything");
  cmd->add_option("--model,-m", *model,
                  "Model: synthetic:<preset>, a .gguf file, or an HF directory (config.json only is read)")
      ->required();
  cmd->add_option("--candidate,-c", *candidate, "Check only this candidate (exit 3 if it is refused)");
  cmd->add_option(
      "--gdn-variant", *gdn_variant,
      "Fused GDN decode ops the plan requests (as `run --gdn-variant`): plain, inplace, ids, conv-update, "
      "conv-update-ids");
  cmd->callback([model, candidate, gdn_variant, &exit_code] {
    ModelConfig cfg;
    try {
      cfg = load_config_spec(*model, 0);
      cfg.gdn_fused = gdn_variant_ops(*gdn_variant);
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
      return;
    }
    fmt::print("{} ({}) requires {}\n\n", cfg.name, family_name(cfg.family), ref::required_ops(cfg).str());
    fmt::print("{:<24} {:<8} {}\n", "candidate", "gate", "missing ops");
    bool refused_one = false;
    for (const auto& e : list_candidates()) {
      if (!candidate->empty() && e.name != *candidate) continue;
      const CandidatePtr c = make_candidate(e.name);
      const OpSet missing = ref::required_ops(cfg).minus(c->capabilities());
      refused_one |= !missing.empty();
      fmt::print("{:<24} {:<8} {}\n", e.name, missing.empty() ? "PASS" : "REFUSED",
                 missing.empty() ? "-" : missing.str());
    }
    exit_code = !candidate->empty() && refused_one ? kExitRefused : 0;
  });
}

}  // namespace ds::cli
