// Connects the backends' launch reports to the harness's launch log (harness/api/launch_log.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launch_log.h"
#include "simt_options.h"

namespace ds::launch_sinks {

// Records for the kernels of a dsk::KernelTable backend ("simt": the SIMT runtime linked into this
// executable; "cuda": CUPTI's activity API, with a warning on stderr when CUPTI cannot record).
// Called by the candidate's load(), in the process that will launch. Idempotent.
void start(std::string_view backend);
// The SIMT runtime copy inside a dlopen'ed plugin, found by its exported C setter: plugins built
// with driftscope_add_simt_kernel get records with no code of their own. False when the library
// has no SIMT runtime (a plugin of plain C++ launches nothing).
// Also applies the configure()d SIMT settings and race sink there; a plugin whose runtime predates
// them gets a warning on stderr and runs with its own defaults.
bool install_in_library(void* dl_handle);
// The SIMT settings of this run: applied at once to driftscope's own runtime (a candidate's child
// process inherits them through fork) and, by install_in_library, to every plugin's. With a race
// check, the runtime's race findings go into the launch records (LaunchRecord::race).
void configure(const SimtOptions& o);
// What configure() set last.
SimtOptions configured();
// configure(o) for as long as it lives, then the defaults again: a run's settings never leak into
// later launches of the same process (tests run many runs in one).
class ScopedOptions {
 public:
  explicit ScopedOptions(const SimtOptions& o) { configure(o); }
  ~ScopedOptions() { configure(SimtOptions{}); }
  ScopedOptions(const ScopedOptions&) = delete;
  ScopedOptions& operator=(const ScopedOptions&) = delete;
};
// Tells every SIMT runtime of this process (driftscope's own and each installed plugin's) that the
// candidate step `name` begins ("" : none is under way): the blocks it allocates are filed under it.
void begin_step(const std::string& name);
// The candidate step under way has ended: what its runtimes found after its last launch's record
// (memcheck's finding of a bad free in the step's cleanup) is filed with that record
// (launch_log::amend_last), then begin_step(""). Idempotent.
void end_step();
// The blocks allocated during a step and still live, in every SIMT runtime of this process.
std::vector<LiveAllocation> live_step_allocations();
// Empty when --simt-racecheck can run here (x86-64 Linux, a SIMT runtime built in); otherwise why not.
std::string racecheck_unsupported();

}  // namespace ds::launch_sinks
