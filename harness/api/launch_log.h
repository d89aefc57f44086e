// Kernel launch records: what a candidate launched while it ran one step. Backends report into
// this process-wide log (the SIMT runtime through its launch sink, CUPTI on a GPU); the runner
// takes the records after each step and files them under that step's stages. In a candidate's
// child process the records travel back to the harness with the step's outputs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "result.h"

namespace ds {

struct LaunchRecord {
  std::string kernel;   // demangled, without parameters: "dsk_simt::rmsnorm_kernel"
  std::string backend;  // "simt" or "cuda"
  std::array<std::uint32_t, 3> grid{}, block{};
  std::uint64_t dyn_smem_bytes = 0;
  double duration_us = 0;
  bool emulated = true;  // CPU wall time of the SIMT runtime, never GPU time
  // Non-empty: `--race-check` found this launch's output to depend on the schedule (the SIMT
  // runtime's finding: the two schedules, the argument and its first differing element).
  std::string race;
  // Reads of shared memory no thread of the block had written, one message each with its
  // file:line, found by the hazard checker in a kernel built CHECKED (`--simt-racecheck`).
  std::vector<std::string> uninit;
  // Under a poison (verify's runs): the declaration sites of locals without an initializer the
  // launch reached, "local `acc` declared without an initializer at FILE:LINE" (the runtime's
  // poison_local); verify singles each out to find a local read before it is written.
  std::vector<std::string> local_sites;
  // `--simt-memcheck`'s findings of the launch (and of frees before it), one message each:
  // "memcheck: KERNEL: out-of-bounds write of 4 bytes at FILE:LINE, thread ... of block ...: ...".
  std::vector<std::string> memory;
  // `--simt-memcheck` was on and could not look into this launch: its kernel was built without
  // the CHECKED flavour's access hooks, so no finding says nothing.
  bool unchecked_by_memcheck = false;
};

// Device memory a candidate step allocated and had not freed when the last step ended: blocks from
// one line of one kernel step, summed over its calls (the SIMT runtime's allocation table).
struct LiveAllocation {
  std::string kernel_step;  // the candidate step under way when the blocks were allocated
  std::string site;         // FILE:LINE that asked for them
  std::uint64_t blocks = 0, bytes = 0;
};

// A launch filed under the candidate step that made it: model step, layer, lane, the step's name
// and the catalog stages it produces.
struct StepLaunch {
  int step = 0;
  int layer = 0;
  Mode mode = Mode::isolated;
  std::string kernel_step;
  std::vector<std::string> stages;
  LaunchRecord launch;
};

namespace launch_log {

// Thread-safe; records arrive in launch order per reporting thread.
void record(LaunchRecord r);
// A device backend whose records arrive late (CUPTI buffers) registers how to flush them; take()
// calls every flusher first.
void add_flusher(std::function<void()> flush);
// Findings of the step's runtime made after its last launch was recorded (a bad free in its
// cleanup), `late`'s uninit reads, local sites and memory findings: added to the last record since
// the last take(), or recorded as `late` itself where the step launched nothing.
void amend_last(LaunchRecord late);
// Every record since the last take(), in arrival order.
std::vector<LaunchRecord> take();
// The live step allocations a candidate's process reported with its last step (each reply carries
// the whole list, so the last one is the state at the end of the run).
void set_live_allocations(std::vector<LiveAllocation> live);
std::vector<LiveAllocation> live_allocations();
// What a stage of a racing launch's step says (its note): "race in launch I of step S: FINDING".
std::string race_note(std::size_t launch_index, const std::string& kernel_step, const LaunchRecord& l);
// What a stage of a step with a memcheck finding says: "memory error in launch I of step S: FINDING".
std::string memory_note(std::size_t launch_index, const std::string& kernel_step, const LaunchRecord& l);

}  // namespace launch_log
}  // namespace ds
