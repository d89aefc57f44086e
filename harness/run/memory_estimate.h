// The memory a run will need at its peak, known from the model's header and the run's options
// before any weight is read, so that a run the machine cannot hold is refused (exit 2) instead
// of being killed by the OOM killer half-way through loading.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model_config.h"
#include "run_options.h"

namespace ds {

// What the candidate does with the weights it is given, as far as memory goes.
struct CandidateMemory {
  std::string name;
  DType storage = DType::f16;
  bool dump = false;       // computes nothing, holds no weights, runs in the harness
  bool on_device = false;  // keeps its weights in GPU memory, not in host memory
  bool in_place = false;   // reads the weights where the harness holds them (simt: host memory is
                           // its device memory), so it adds no copy of them...
  // ...but for these roles of a layer of each block kind, which it copies (in_place only): the
  // parts of a matrix it packs from several stored tensors. Empty: none.
  std::function<std::vector<std::string_view>(BlockKind)> copied_roles;
  // Reads a quantized matrix a row at a time (cpu-f16); any other candidate's child decodes each
  // quantized matrix to f32 once (WeightStore::find) and holds that copy.
  bool reads_quantized = false;
};

struct MemoryPart {
  std::string what;
  std::uint64_t bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryPart> parts;
  std::uint64_t total() const;
  // "1.95 GiB (weights 1.00 GiB, reference 0.12 GiB, ...)"
  std::string str() const;
};

// Bytes per element the loader of `model_spec` will hold its weights in: the synthetic
// presets' dtype, a GGUF file's stored bytes (quantized matrices stay quantized, F16 and BF16
// stay 2 bytes) over its element count, an HF directory's stored dtype (its *.safetensors bytes
// over the full model's element count). Under 2: a quantized model.
double held_bytes_per_weight(const std::string& model_spec, const ModelConfig& full);

// Elements of every weight the model `cfg` has (required roles, plus the untied output).
std::uint64_t weight_elements(const ModelConfig& cfg);

// The peak resident memory of a run of `cfg` (its layers as the run truncates them) under
// `opt`: the harness's weights and the reference's and noise floors' own copies, the
// candidate's copy in its child process (pages shared with the harness through fork are
// counted once), KV caches, activations and the processes' fixed cost; with `baseline` (run
// --baseline), that candidate's copy and child process too.
MemoryEstimate estimate_memory(const ModelConfig& cfg, double bytes_per_weight, const RunOptions& opt,
                               const CandidateMemory& cand, const CandidateMemory* baseline = nullptr);

// "3G", "512M", "64K", "1.5GiB", "1000000" (bytes; suffixes are powers of 1024); nullopt when
// malformed or zero.
std::optional<std::uint64_t> parse_memory_size(std::string_view text);
// MemAvailable of /proc/meminfo in bytes; nullopt where it cannot be read.
std::optional<std::uint64_t> available_memory();
std::string format_bytes(std::uint64_t bytes);

}  // namespace ds
