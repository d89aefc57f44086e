// driftscope merge: the traces of every shard of a nightly matrix into one file.
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "build_info.h"
#include "commands.h"
#include "runner.h"
#include "trace_merge.h"
#include "trace_writer.h"

namespace ds::cli {

namespace {
struct MergeArgs {
  std::string out;
  std::vector<std::string> inputs;
};
}  // namespace

void add_merge_command(CLI::App& app, const std::vector<std::string>& argv, int& exit_code) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand("merge",
                                     "Merge shard traces (single runs or merged files) into one file, one "
                                     "case per (model, candidate, seed)");
  cmd->add_option("--output,-o", args->out, "The merged HDF5 file to write")->required();
  cmd->add_option("traces", args->inputs, "Traces to merge (a merged file's cases are taken one by one)")
      ->required();
  std::string command_line;
  for (const auto& a : argv) command_line += (command_line.empty() ? "" : " ") + a;
  cmd->callback([args, command_line, &exit_code] {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const nlohmann::json root = {{"tool_version", tool_version()},
                                 {"git_revision", git_revision()},
                                 {"host", host},
                                 {"command_line", command_line}};
    try {
      const auto cases = trace::merge_traces(args->inputs, args->out, root);
      for (const auto& c : cases)
        fmt::print("{:<12} {:<56} {:<16} {}\n", c.group, c.key(),
                   !c.finished         ? std::string("INCOMPLETE")
                   : c.stopped_early() ? fmt::format("exit {} {}", c.exit_code, c.status)
                                       : fmt::format("exit {}", c.exit_code),
                   c.source);
      fmt::print("merged {} case(s) from {} file(s) into {}\n", cases.size(), args->inputs.size(), args->out);
      exit_code = kExitParity;
    } catch (const trace::TraceError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
