// Options shared by the subcommands that judge and report: --policy, --json, --junit, --markdown.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "policy.h"
#include "report_files.h"

namespace ds::cli {

struct ReportOptions {
  std::string policy;  // a YAML file; empty: the built-in policy
  ReportFiles files;
};

void add_report_options(CLI::App* cmd, ReportOptions& opt);
// The policy named by --policy (or the built-in one); throws InputError on a bad file.
Policy load_policy(const ReportOptions& opt);

}  // namespace ds::cli
