#include "simt_flags.h"

#include <fmt/format.h>

namespace ds::cli {

// Far more schedules than any race needs; bounds a typo's cost (each is a full rerun of a launch).
constexpr unsigned kMaxRaceSchedules = 64;
// More host threads than this only adds waiting on the launch lock.
constexpr unsigned kMaxSimtThreads = 256;

void add_simt_flags(CLI::App* cmd, SimtOptions& o) {
  cmd->add_option_function<std::string>(
         "--simt-order",
         [&o](const std::string& v) {
           if (const std::string why = parse_simt_order(v, o); !why.empty())
             throw CLI::ValidationError("--simt-order", why);
         },
         "Order of the CUDA threads of a block in every SIMT launch of the candidate: forward, reverse, "
         "random or random:SEED (a new shuffle per barrier phase). A race-free kernel gives the same "
         "output under every order")
      ->default_str("forward");
  cmd->add_option("--simt-threads", o.threads,
                  "Host threads the blocks of a SIMT launch are spread over (1 to 256; default: every core "
                  "DRIFTSCOPE_THREADS allows for the built-in simt candidate, whose blocks never race, and 1 "
                  "for any other and under a checker). A race-free kernel gives the same bits for any count "
                  "and runs faster on more; one whose blocks race (a block reading what another writes, "
                  "cross-block float atomics) is reproducible only on 1")
      ->check(CLI::Range(1u, kMaxSimtThreads))
      ->default_str("simt: every core; others: 1");
  cmd->add_flag("--simt-strict", o.strict,
                "SIMT strict mode: __syncthreads after some threads of the block exited is an error (a "
                "hang on other vendors' GPUs) and the step is reported as crashed");
  cmd->add_option("--race-check", o.race_check,
                  fmt::format("Rerun every SIMT launch under K other schedules (0 to {}) from identical "
                              "inputs; an output that differs makes the stages of its step `race` (a "
                              "failure), naming the kernel, the launch and the first differing element",
                              kMaxRaceSchedules))
      ->type_name("K")
      ->check(CLI::Range(0u, kMaxRaceSchedules))
      ->capture_default_str();
  cmd->add_flag("--simt-racecheck", o.racecheck,
                "The SIMT shared-memory hazard checker on every launch: read-after-write, write-after-read "
                "and write-after-write between threads of a barrier phase, with file:line (x86-64 Linux; "
                "about two signals per shared-memory access); a hazard makes the stages of its step `race`");
  cmd->add_flag("--simt-memcheck", o.memcheck,
                "The SIMT memory checker on every launch (the kernels' checked flavour): device memory gets "
                "red zones and freed blocks a quarantine; an access out of bounds, after a free, misaligned, "
                "or through a null or wild pointer stops the launch before it lands, and a double free or a "
                "free of a pointer never allocated is caught; each makes the stages of its step `memory`, "
                "naming the kernel, its file:line, block and thread");
}

}  // namespace ds::cli
