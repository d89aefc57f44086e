// --timeout SECONDS, shared by `run`, `check` and `verify` (docs/cli.md): how long the candidate's
// load() or one of its steps may take before it is a hang (a crash, exit 4).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace ds::cli {

// `timeout_s` holds the default shown in --help; a negative or non-numeric value is a CLI parse
// error naming the flag (exit 2).
void add_timeout_flag(CLI::App* cmd, double& timeout_s);

// A number of seconds from 0 to `max` (text and NaN refused with `refusal`), for any flag of seconds.
CLI::Validator seconds_validator(double max, std::string refusal);

}  // namespace ds::cli
