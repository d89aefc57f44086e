#include "memory_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "contracts.h"
#include "loaders/gguf.h"
#include "load_model.h"
#include "local_check.h"
#include "reference.h"
#include "shapes.h"
#include "stage_catalog.h"
#include "synthetic.h"
#include "weights.h"

namespace ds {

namespace {

constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

// Resident memory of a process of ours before it holds a model: the binary, its libraries,
// malloc arenas and thread stacks (measured: ~17 MiB for the harness).
constexpr std::uint64_t kProcessBytes = std::uint64_t(16 * kMiB);
// The candidate's child adds the SIMT runtime's fiber stacks and its device-buffer pool.
constexpr std::uint64_t kChildBytes = std::uint64_t(8 * kMiB);

struct Weight {
  std::string name;
  Shape shape;
};

std::vector<Weight> weights_of(const ModelConfig& cfg) {
  std::vector<Weight> out;
  auto add = [&](const std::string& name) {
    if (auto s = ref::expected_shape(cfg, name)) out.push_back({name, *s});
  };
  for (const auto& role : ref::required_roles(cfg, kModelLayer)) add(ref::role_tensor(kModelLayer, role));
  if (!cfg.tied_embeddings) add("output.weight");
  for (int l = 0; l < cfg.n_layers; ++l)
    for (const auto& role : ref::required_roles(cfg, l)) add(ref::role_tensor(l, role));
  return out;
}

DType held_dtype(double bytes_per_weight) {
  if (bytes_per_weight <= 2.0) return DType::bf16;
  if (bytes_per_weight <= 4.0) return DType::f32;
  return DType::f64;
}

std::uint64_t kv_bytes_per_position(const ModelConfig& cfg) {
  std::uint64_t b = 0;
  for (int l = 0; l < cfg.n_layers; ++l) {
    const BlockKind k = cfg.block_kind(l);
    if (k == BlockKind::decoder || k == BlockKind::gpt2 || k == BlockKind::gated_attn)
      b += 2 * std::uint64_t(cfg.kv_dim()) * 8;
  }
  return b;
}

std::uint64_t recurrent_state_bytes(const ModelConfig& cfg) {
  std::uint64_t b = 0;
  for (int l = 0; l < cfg.n_layers; ++l)
    if (cfg.block_kind(l) == BlockKind::gdn)
      b += (std::uint64_t(cfg.gdn_v_heads) * cfg.gdn_k_dim * cfg.gdn_v_dim +
            std::uint64_t(cfg.conv_kernel) * cfg.gdn_conv_dim()) *
           8;
  return b;
}

// Widths of every stage tensor one layer produces for one token, summed (f64 elements).
std::uint64_t layer_stage_width(const ModelConfig& cfg) {
  return 10 * std::uint64_t(cfg.hidden) + 4 * std::uint64_t(cfg.q_dim()) + 4 * std::uint64_t(cfg.kv_dim()) +
         4 * std::uint64_t(cfg.ffn);
}

// The elements an in-place candidate still copies: the roles it packs, over every layer.
std::uint64_t copied_elements(const ModelConfig& cfg, const CandidateMemory& c) {
  std::uint64_t n = 0;
  if (!c.copied_roles) return n;
  for (int l = 0; l < cfg.n_layers; ++l)
    for (std::string_view role : c.copied_roles(cfg.block_kind(l)))
      if (auto s = ref::expected_shape(cfg, layer_weight(l, role))) n += std::uint64_t(numel(*s));
  return n;
}

}  // namespace

std::uint64_t MemoryEstimate::total() const {
  std::uint64_t t = 0;
  for (const auto& p : parts) t += p.bytes;
  return t;
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = double(bytes);
  if (b >= kGiB) return fmt::format("{:.2f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:.0f} MiB", b / kMiB);
  if (b >= kKiB) return fmt::format("{:.0f} KiB", b / kKiB);
  return fmt::format("{} B", bytes);
}

std::string MemoryEstimate::str() const {
  std::string s = format_bytes(total()) + " (";
  bool first = true;
  for (const auto& p : parts) {
    if (p.bytes == 0) continue;
    s += fmt::format("{}{} {}", first ? "" : ", ", p.what, format_bytes(p.bytes));
    first = false;
  }
  return s + ")";
}

std::uint64_t weight_elements(const ModelConfig& cfg) {
  std::uint64_t n = 0;
  for (const auto& w : weights_of(cfg)) n += std::uint64_t(numel(w.shape));
  return n;
}

double held_bytes_per_weight(const std::string& model_spec, const ModelConfig& full) {
  namespace fs = std::filesystem;
  if (const auto preset = ref::synthetic_preset(model_spec))
    return double(dtype_size(ref::synthetic_dtype(*preset)));
  std::error_code ec;
  if (fs::is_directory(model_spec, ec)) {
    // The loader keeps an HF checkpoint's stored dtype (transposes copy, but in that dtype).
    std::uint64_t bytes = 0;
    for (const auto& e : fs::directory_iterator(model_spec, ec))
      if (e.path().extension() == ".safetensors") bytes += e.file_size(ec);
    const std::uint64_t n = weight_elements(full);
    return n > 0 && bytes > 0 ? std::clamp(double(bytes) / double(n), 1.0, 8.0) : 4.0;
  }
  // A GGUF: what its tensor table says each tensor takes (anything without a decoder is held as f32).
  double bytes = 0, n = 0;
  try {
    const ref::GgufFile f(model_spec);
    for (const auto& t : f.tensors()) {
      double elems = 1;
      for (std::int64_t d : t.ne) elems *= double(d);
      const auto info = ref::ggml_type_info(t.type);
      const bool kept = info && (ref::ggml_row_decoder(info->type) != nullptr || info->block_elems == 1);
      bytes += kept ? elems * double(info->block_bytes) / double(info->block_elems) : elems * 4;
      n += elems;
    }
  } catch (const std::exception&) {
    return 4.0;  // not a GGUF the loader would read: it refuses the file itself, naming it
  }
  return n > 0 ? std::clamp(bytes / n, 0.25, 8.0) : 4.0;
}

MemoryEstimate estimate_memory(const ModelConfig& cfg, double bytes_per_weight, const RunOptions& opt,
                               const CandidateMemory& cand, const CandidateMemory* baseline) {
  const DType held = held_dtype(bytes_per_weight);
  const std::uint64_t lanes = std::max<std::size_t>(opt.modes.size(), 1);
  // The oracle and one noise floor per mode, for every sequence of a batch (each computed alone),
  // and a chained lane's two honest engines where it runs the local check.
  const std::uint64_t seqs = std::uint64_t(std::max(opt.batch_sequences, 1));
  const bool chained = std::find(opt.modes.begin(), opt.modes.end(), Mode::chained) != opt.modes.end();
  const std::uint64_t honest = chained && local_check_runs(opt, cand.dump) ? 2 : 0;
  const std::uint64_t references = (1 + lanes) * seqs + honest;
  std::uint64_t weights = 0, reference_own = 0, elements = 0;
  for (const auto& w : weights_of(cfg)) {
    const std::uint64_t n = std::uint64_t(numel(w.shape));
    elements += n;
    weights += std::uint64_t(std::llround(double(n) * bytes_per_weight));
    reference_own += ref::Reference::own_bytes(w.name, w.shape, held);
  }
  // A candidate's own copy of the weights in its child process.
  const bool quantized = bytes_per_weight < 2.0;
  auto copy_of = [&](const CandidateMemory& c) {
    if (c.dump) return std::uint64_t(0);
    // Its child decodes a quantized model's matrices to f32 unless it reads them a row at a time.
    std::uint64_t bytes = quantized && !c.reads_quantized ? elements * 4 : 0;
    if (!c.on_device) {
      const double per = std::clamp(bytes_per_weight, 2.0, 4.0);
      bytes += std::uint64_t(double(c.in_place ? copied_elements(cfg, c) : elements) * per);
    }
    return bytes;  // the reference fill (cpu-f16 math) reads them in place too
  };
  const std::uint64_t candidate = copy_of(cand);

  // A batch: every sequence's positions, in each of its references (counted per sequence above).
  const std::uint64_t positions =
      (seqs > 1 ? std::uint64_t(opt.batch_prompt_rows) / seqs + 1 : std::uint64_t(opt.prompt_tokens)) +
      std::uint64_t(opt.decode_steps);
  const std::uint64_t T = std::uint64_t(std::max(seqs > 1 ? opt.batch_prompt_rows : opt.prompt_tokens, 1));
  // Every reference's own cache, and the runner's histories of the cached stages.
  const std::uint64_t kv =
      (kv_bytes_per_position(cfg) * positions + recurrent_state_bytes(cfg)) * (references + lanes);
  // One layer's stage tensors of the prefill in every reference and lane (values, the wire's
  // copies), and the logits likewise: [T, vocab], or one row when the prefill comes before
  // --from-step (its judged steps after it are single-token decode steps).
  const std::uint64_t logit_rows = opt.from_step > 0 ? 1 : T;
  std::uint64_t activations =
      (layer_stage_width(cfg) * T + 2 * std::uint64_t(cfg.vocab) * logit_rows) * 8 * (references + 2 * lanes);
  if (!opt.trace_path.empty() && opt.capture != trace::Capture::stats)
    activations += layer_stage_width(cfg) * T * 8 * 2;

  MemoryEstimate e;
  e.parts = {{"weights", weights},
             {"reference copies", reference_own * references},
             {"candidate", candidate},
             {"kv cache", kv},
             {"activations", activations},
             {"processes", kProcessBytes + (opt.isolate_process && !cand.dump ? kChildBytes : 0)}};
  if (baseline)
    e.parts.push_back({fmt::format("baseline {}", baseline->name),
                       copy_of(*baseline) + (opt.isolate_process ? kChildBytes : 0)});
  return e;
}

std::optional<std::uint64_t> parse_memory_size(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || p == text.data() || !(value > 0) || !std::isfinite(value)) return std::nullopt;
  std::string unit(p, end);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("B"))
    unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K")
    scale = kKiB;
  else if (unit == "M")
    scale = kMiB;
  else if (unit == "G")
    scale = kGiB;
  else if (unit == "T")
    scale = kGiB * 1024;
  else
    return std::nullopt;
  const double bytes = value * scale;
  if (bytes < 1 || bytes > 1.8e19) return std::nullopt;
  return std::uint64_t(bytes);
}

std::optional<std::uint64_t> available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace ds
