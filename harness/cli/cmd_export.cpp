// driftscope export TRACE --format safetensors|npy --out DIR: the reference's stage tensors as
// golden data for an engine's own tests (docs/dumps.md).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "install_paths.h"
#include "export_trace.h"
#include "runner.h"

namespace ds::cli {

void add_export_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ExportOptions>();
  auto dtype = std::make_shared<std::string>("f32");
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write the reference's stage tensors of a trace (and its prompt tokens) as .npy or .safetensors files, "
      "under catalog names or a dump mapping's names; the directory reads back as --candidate dump:DIR");
  cmd->add_option("trace", opt->trace, "The trace (driftscope run --trace; tensors kept by --capture all)")
      ->required();
  cmd->add_option("--format", opt->format,
                  "safetensors (one file per model step) or npy (one file per stage)")
      ->check(CLI::IsMember({"safetensors", "npy"}));
  cmd->add_option("--stages", opt->stages, "Only stages whose name matches this regex");
  cmd->add_option(
      "--mapping", opt->mapping,
      "A dump mapping (YAML, docs/dumps.md), a file or the name of a shipped one (llama.cpp-llama, "
      "hf-qwen3, ...; installed under share/driftscope/dumps/): write each stage under the engine's "
      "file and tensor names, in its layout (head order, fused QKV, rows so far) and in its shapes "
      "(the mapping's shapes: and shape:, e.g. llama.cpp's [T, heads, head_dim] and [W])");
  cmd->add_option("--dtype", *dtype, "The dtype of the written tensors")
      ->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--case", opt->case_index, "Which case of a merged file, from 0");
  cmd->add_option("--out,-o", opt->out, "The directory to write (created if missing)")->required();
  cmd->callback([opt, dtype, &exit_code] {
    try {
      opt->dtype = *parse_dtype(*dtype);
      if (!opt->mapping.empty()) {
        const std::string given = opt->mapping;
        opt->mapping = find_shipped_yaml("dumps", given, "--mapping");
        if (opt->mapping != given) fmt::print("--mapping {}: the shipped {}\n", given, opt->mapping);
      }
      const ExportSummary s = export_trace(*opt);
      fmt::print(
          "exported {} reference tensor(s) into {} file(s) under {}\nmapping: {} (read it back with "
          "--candidate dump:{})\n",
          s.tensors, s.files, opt->out, s.mapping, opt->out);
      exit_code = kExitParity;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
