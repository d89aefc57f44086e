// The SIMT runtime flags shared by `run` and `replay`: --simt-order, --simt-threads, --simt-strict,
// --race-check, --simt-racecheck (docs/cli.md). A bad value is a CLI parse error naming the flag (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include "simt_options.h"

namespace ds::cli {

void add_simt_flags(CLI::App* cmd, SimtOptions& o);

}  // namespace ds::cli
