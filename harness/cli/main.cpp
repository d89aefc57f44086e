// driftscope: the command line. Each subcommand lives in its own file and registers here.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>

#include "build_info.h"
#include "commands.h"
#include "python_flag.h"
#include "runner.h"

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) the kernel sends SIGXFSZ, whose default ends the process with
  // no word (exit 153). Ignored, the write fails with EFBIG instead and the command reports it (exit
  // 2, naming the file), as on a full disk. The candidate's child process inherits the setting.
  std::signal(SIGXFSZ, SIG_IGN);
  ds::cli::export_python_sdk_dir();  // before any command: a check's runs inherit it
  CLI::App app{
      "driftscope: differential parity testing of LLM inference kernels.\n"
      "Runs a double-precision reference transformer and a candidate side by side, stage by stage and layer "
      "by\n"
      "layer, records every stage to an HDF5 trace and names the first stage where the candidate diverges.\n"
      "Exit codes: 0 parity, 1 parity failure, 2 bad usage or input, 3 refused by a gate, 4 candidate "
      "crashed."};
  app.require_subcommand(1);
  app.set_version_flag("--version", ds::tool_version());
  const std::vector<std::string> args(argv, argv + argc);
  int exit_code = ds::kExitParity;
  ds::cli::add_run_command(app, args, exit_code);
  ds::cli::add_candidates_command(app, exit_code);
  ds::cli::add_gate_command(app, exit_code);
  ds::cli::add_replay_command(app, exit_code);
  ds::cli::add_report_command(app, exit_code);
  ds::cli::add_diff_command(app, exit_code);
  ds::cli::add_merge_command(app, args, exit_code);
  ds::cli::add_new_candidate_command(app, exit_code);
  ds::cli::add_export_command(app, exit_code);
  ds::cli::add_check_command(app, exit_code);
  ds::cli::add_verify_command(app, exit_code);
  ds::cli::add_history_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : ds::kExitUsage;
  } catch (const std::exception& e) {
    // No command should let one through; if one does, it is an error (2) with its message, never
    // an abort (134).
    fmt::print(stderr, "error: {}\n", e.what());
    return ds::kExitUsage;
  }
  // Every status the CLI ends with is one of the documented 0-4; anything else is a bug, said as 2.
  return exit_code >= ds::kExitParity && exit_code <= ds::kExitCrashed ? exit_code : ds::kExitUsage;
}
