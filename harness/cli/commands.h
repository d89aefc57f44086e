// Subcommand registration: each adds itself to the app and sets `exit_code` when it runs.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ds::cli {

void add_run_command(CLI::App& app, const std::vector<std::string>& argv, int& exit_code);
void add_merge_command(CLI::App& app, const std::vector<std::string>& argv, int& exit_code);
void add_candidates_command(CLI::App& app, int& exit_code);
void add_gate_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_diff_command(CLI::App& app, int& exit_code);
void add_new_candidate_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_verify_command(CLI::App& app, int& exit_code);
void add_history_command(CLI::App& app, int& exit_code);

}  // namespace ds::cli
