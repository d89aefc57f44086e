// driftscope candidates [PATH.so ...]: the built-in candidates, or a plugin's, with their
// storage dtype and capabilities (and, for a plugin, which build it is).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "registry.h"
#include "runner.h"

namespace ds::cli {

namespace {
void print_candidate(const Candidate& c, const std::string& spec) {
  fmt::print("{}\n  {}\n  storage: {}\n  capabilities: {}\n", spec, c.description(),
             dtype_name(c.storage_dtype()), c.capabilities().str());
}

// The built-ins, grouped by what they are for: a mutant or a self-test is never what a user tests.
void print_builtins() {
  static constexpr const char* kTitles[] = {
      "Backends (--candidate NAME)",
      "Mutants: our kernels or cpu-f16 with a planted bug, each caught at its documented stage "
      "(docs/mutants.md)",
      "Harness self-tests: candidates that crash or hang on purpose"};
  const auto group_of = [](const std::string& name) {
    return name.rfind("mutant:", 0) == 0 ? 1 : name.rfind("selftest:", 0) == 0 ? 2 : 0;
  };
  const auto entries = list_candidates();
  for (int g = 0; g < 3; ++g) {
    fmt::print("== {}\n", kTitles[g]);
    for (const auto& e : entries)
      if (group_of(e.name) == g) print_candidate(*make_candidate(e.name), e.name);
    if (g == 0)
      for (const auto& a : list_candidate_aliases())
        fmt::print("{}\n  another name for {} (kept from when Qwen3-Next had candidates of its own)\n",
                   a.alias, a.target);
    fmt::print("\n");
  }
  fmt::print(
      "== Yours\nPATH.so[:NAME]\n  a plugin built against the SDK: every candidate it registers, or NAME "
      "(docs/your-kernel.md; `driftscope candidates PATH.so` lists them)\n");
}
}  // namespace

void add_candidates_command(CLI::App& app, int& exit_code) {
  auto plugins = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "candidates", "List the registered candidates and their capabilities, or those of plugin files");
  cmd->add_option("plugins", *plugins, "Plugin files (PATH.so): list the candidates each registers instead");
  cmd->callback([plugins, &exit_code] {
    exit_code = 0;
    if (plugins->empty()) {
      print_builtins();
      fmt::print(
          "dump:DIR[:MAPPING.yaml]\n  the stage tensors another engine (llama.cpp, HF transformers, ...) "
          "dumped "
          "into DIR\n  (.npy, .npz, .safetensors), read through DIR/mapping.yaml; chained mode only "
          "(docs/dumps.md)\n");
      return;
    }
    for (const std::string& path : *plugins) {
      try {
        if (!parse_plugin_spec(path))
          throw std::invalid_argument(fmt::format("{}: not a plugin file name (PATH.so)", path));
        const auto specs = expand_candidate_spec(path);
        for (const std::string& spec : specs) {
          const CandidatePtr c = make_candidate(spec);
          print_candidate(*c, spec);
          if (const auto o = plugin_origin(*c))
            fmt::print("  plugin: {} version {}, built with SDK {}, sha256 {}\n", o->path,
                       o->plugin_version.empty() ? "-" : o->plugin_version, o->sdk_version, o->sha256);
        }
      } catch (const CandidateCrash& e) {
        fmt::print(stderr, "error: plugin {} crashed while being opened: {}\n", path, e.what());
        exit_code = kExitCrashed;
      } catch (const std::exception& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        exit_code = kExitUsage;
      }
    }
  });
}

}  // namespace ds::cli
