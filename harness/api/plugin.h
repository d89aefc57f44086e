// The plugin entry point: how a shared library built outside Driftscope hands it candidates.
//
// A plugin is a shared library that exports one C function, `driftscope_plugin`, returning a
// description that starts with the ABI version it was built with. Driftscope reads that number
// before anything else and refuses a plugin whose ABI differs from its own, because the
// Candidate interface, Tensor and ModelConfig cross the boundary as C++ objects: their layout
// must be the same on both sides. DRIFTSCOPE_PLUGIN_ABI_VERSION is bumped whenever one of them
// changes. Build plugins with the same compiler family and standard library as Driftscope.
//
// Write it with the macro (docs/your-kernel.md):
//
//   DRIFTSCOPE_PLUGIN("1.0.0",
//                     {"my-rmsnorm", [] () -> ds::Candidate* { return new MyRmsnorm; }})
//
// `driftscope run --candidate build/libmy.so` then runs every candidate the plugin registers,
// `--candidate build/libmy.so:my-rmsnorm` one of them. The library is opened only in the
// candidate's child process, so a plugin that crashes cannot take the harness down.
#pragma once

#include <cstdint>

#include "candidate.h"
#include "version.h"

// ABI history: 1, the first; 2, batches (StepContext::seqs, Candidate::batches; docs/batches.md);
// 3, Candidate::moe_limits and Candidate::batch_order_varies (new virtual functions: a plugin
// built for 2 has another vtable); 4, WeightStore holds quantized matrices (another layout).
#define DRIFTSCOPE_PLUGIN_ABI_VERSION 4u
#define DRIFTSCOPE_PLUGIN_ENTRY "driftscope_plugin"

extern "C" {

struct ds_plugin_candidate {
  const char* name;              // what --candidate PATH.so:NAME selects
  ds::Candidate* (*make)(void);  // a new candidate; Driftscope deletes it
};

struct ds_plugin {
  std::uint32_t abi_version;   // DRIFTSCOPE_PLUGIN_ABI_VERSION of the SDK the plugin was built with
  const char* sdk_version;     // DRIFTSCOPE_SDK_VERSION of that SDK
  const char* plugin_version;  // the plugin's own version, recorded in every trace
  std::uint32_t n_candidates;
  const ds_plugin_candidate* candidates;
};

typedef const ds_plugin* (*ds_plugin_entry_fn)(void);
}

#define DRIFTSCOPE_PLUGIN(PLUGIN_VERSION, ...)                                                              \
  extern "C" __attribute__((visibility("default"))) const ds_plugin* driftscope_plugin(void) {              \
    static const ds_plugin_candidate candidates[] = {__VA_ARGS__};                                          \
    static const ds_plugin plugin = {DRIFTSCOPE_PLUGIN_ABI_VERSION, DRIFTSCOPE_SDK_VERSION, PLUGIN_VERSION, \
                                     sizeof candidates / sizeof candidates[0], candidates};                 \
    return &plugin;                                                                                         \
  }
