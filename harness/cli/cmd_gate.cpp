// driftscope gate --model M: for every registered candidate (or the one given, a plugin too),
// may it serve M? Reads only the model's configuration and the candidates' plans.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "commands.h"
#include "dump_run.h"
#include "contracts.h"
#include "gate.h"
#include "registry.h"
#include "runner.h"

namespace ds::cli {

void add_gate_command(CLI::App& app, int& exit_code) {
  auto model = std::make_shared<std::string>();
  auto candidate = std::make_shared<std::string>();
  auto gdn_variant = std::make_shared<std::string>();
  auto fill = std::make_shared<std::string>("none");
  CLI::App* cmd = app.add_subcommand(
      "gate",
      "Show which candidates can serve a model (coverage and capability gates), without computing anything");
  cmd->add_option("--model,-m", *model,
                  "Model: synthetic:<preset>, a .gguf file, or an HF directory (config.json only is read)")
      ->required();
  cmd->add_option("--candidate,-c", *candidate,
                  "Check only this candidate, or a plugin's (PATH.so[:NAME]); exit 3 if one is refused");
  cmd->add_option(
      "--gdn-variant", *gdn_variant,
      "Fused GDN decode ops the plan requests (as `run --gdn-variant`): plain, inplace, ids, conv-update, "
      "conv-update-ids");
  cmd->add_option("--fill", *fill,
                  "As `run --fill`: with reference, a partial candidate is asked only for its own stages")
      ->check(CLI::IsMember({"none", "reference"}))
      ->capture_default_str();
  cmd->callback([model, candidate, gdn_variant, fill, &exit_code] {
    ModelConfig cfg;
    std::vector<std::string> names;
    try {
      cfg = load_config_spec(*model, 0);
      cfg.gdn_fused = gdn_variant_ops(*gdn_variant);
      if (candidate->empty())
        for (const auto& e : list_candidates()) names.push_back(e.name);
      else
        names = expand_candidate_spec(*candidate);
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
      return;
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: --candidate: {}\n", e.what());
      exit_code = kExitUsage;
      return;
    }
    fmt::print("{} ({}) requires {}\n\n", cfg.name, family_name(cfg.family), ref::required_ops(cfg).str());
    std::size_t width = 9;
    for (const auto& n : names) width = std::max(width, n.size());
    fmt::print("{:<{}}  {:<11} {}\n", "candidate", width, "gate", "why not");
    bool refused_one = false, bad_one = false;
    for (const auto& name : names) {
      std::string verdict = "PASS", why = "-";
      try {
        const CandidatePtr c = make_candidate(name);
        // A dump's unmapped stages are judged missing, not refused (as `run` does).
        const GateAnswer a = gate_candidate(cfg, *c, *fill == "reference" || as_dump(*c));
        if (a.unavailable) {
          verdict = "UNAVAILABLE";
          why = a.reason;
          refused_one = true;
        } else if (!a.pass) {
          verdict = "REFUSED";
          why = a.reason;
          refused_one = true;
        } else if (*fill == "reference" && !a.coverage.complete()) {
          why = fmt::format("fills {} stage(s)", a.coverage.missing_count());
        }
      } catch (const std::exception& e) {
        verdict = "ERROR";
        why = e.what();
        bad_one = true;
      }
      fmt::print("{:<{}}  {:<11} {}\n", name, width, verdict, why);
    }
    exit_code = bad_one ? kExitUsage : !candidate->empty() && refused_one ? kExitRefused : 0;
  });
}

}  // namespace ds::cli
