// The SIMT runtime settings a run asks for (`run --simt-order/--simt-threads/--simt-strict/
// --race-check/--simt-racecheck`): applied to every SIMT launch of the candidate, in driftscope's own runtime
// and in the runtime copy inside a plugin (candidates/launch_sinks.h), and recorded in the trace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ds {

struct SimtOptions {
  enum class Order : std::uint8_t { forward, reverse, random };
  Order order = Order::forward;
  std::uint64_t seed = 0;  // of Order::random
  // Host threads the blocks of a launch spread over; 0: every core. 1 by default in a run: a
  // kernel whose blocks race with each other (mutant:chain-add-idx reads rows another block
  // writes) then still gives the same bits on every run and every replay.
  unsigned threads = 1;
  bool strict = false;      // __syncthreads after some threads of the block exited is an error
  unsigned race_check = 0;  // > 0: every launch rerun under this many other schedules
  bool racecheck = false;   // the shared-memory hazard checker on every launch
  bool memcheck = false;    // the memory checker on every launch (the kernels' checked flavour)
  // What device memory and shared memory start as (`verify`'s poison runs): 0 the runtime's
  // default (0xFF bytes), 1 NaN payloads (0x7FC1 in every 16-bit half), 2 finite garbage (0x4A3D).
  unsigned poison = 0;
  static constexpr unsigned kPoisonNan = 1, kPoisonFinite = 2;  // simt_common.h PoisonPattern
  // Under a poison, the one declaration site of locals that starts as the other poison
  // (simt::Config::poison_site, simt::poison_site_id of "file:line"); 0 none.
  std::uint64_t poison_site = 0;
  bool operator==(const SimtOptions&) const = default;
};

// Whether a run is served by kernels' checked flavour (hooked loads and stores): under the hazard
// checker (the hooks name every access's line) and under the schedule rerun (whose first rerun
// interleaves at the hooked accesses); with both, the checker watches the first schedule and the
// reruns follow. The simt candidate and plugins (their checked twin) choose alike, and the report
// says which twin served.
// Memcheck sees accesses through the hooks only.
inline bool serves_checked_kernels(const SimtOptions& o) {
  return o.racecheck || o.race_check > 0 || o.memcheck;
}

// "forward", "reverse", "random" (seed 0) or "random:SEED" into `o`; otherwise the reason.
std::string parse_simt_order(std::string_view text, SimtOptions& o);
// The order as parse_simt_order reads it back ("random:7").
std::string simt_order_text(const SimtOptions& o);
// The host threads `o` asks for, with 0 (every core) resolved to this machine's core count: what the
// runtime gets (a plugin's older runtime read 0 as 1) and what the trace records.
unsigned simt_threads(const SimtOptions& o);

}  // namespace ds
