// Race checking by schedule: a launch runs under its configured schedule, then again under
// Config::race_schedules other schedules from the same inputs; an output that differs is a race.
#pragma once

#include "simt/simt_cpu.h"

#include <string>

namespace simt::detail {

using GridRunner = void (*)(const LaunchDesc& d, const Config& cfg);

// Runs `d` under `cfg` and its reruns; leaves memory as the first run left it. Returns the wall
// time of that first run. A difference goes to the race sink, or is thrown as a KernelError
// when none is installed. What is restored and compared: the simt::malloc blocks the kernel's
// non-const pointer arguments point into. A launch with such an argument outside simt::malloc
// memory runs once, unchecked (its inputs could not be restored), with a note on stderr.
double run_race_checked(const LaunchDesc& d, const Config& cfg, GridRunner run_grid);
// A race finding of launch `d` to the race sink; a KernelError when none is installed.
void report_race(const LaunchDesc& d, const std::string& message);

}  // namespace simt::detail
