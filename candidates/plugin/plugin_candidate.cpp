#include "plugin_candidate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>

#include "launch_sinks.h"
#include "stage_catalog.h"
#include "wire.h"

namespace ds {

namespace {

// Opening a plugin and asking for its plans takes milliseconds; a minute is a hang.
constexpr double kProbeTimeoutS = 60;

// Runs `fn` in a forked child against the opened library. A PluginError there comes back as
// one here (bad file, exit 2); a crash, hang or other exception as CandidateCrash (exit 4).
std::string probe_forked(const std::string& path, const std::string& what,
                         const std::function<std::string(const PluginLibrary&)>& fn) {
  const std::string reply = wire::run_forked(what, kProbeTimeoutS, [&]() -> std::string {
    try {
      const PluginLibrary lib(path);
      return "O" + fn(lib);
    } catch (const PluginError& e) {
      return "E" + std::string(e.what());
    }
  });
  if (reply.empty()) throw PluginError(fmt::format("plugin {}: the probe answered nothing", path));
  if (reply[0] == 'E') throw PluginError(reply.substr(1));
  return reply.substr(1);
}

// A probe's answer comes from a process that ran the plugin's code, which may have scribbled on
// it: what does not parse is the plugin's crash (exit 4), never the harness's.
template <class Read>
auto read_answer(const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const wire::Malformed& e) {
    throw CandidateCrash(what, fmt::format("sent a malformed answer: {}", e.what()));
  }
}

void put_strings(std::string& buf, const std::vector<std::string>& v) {
  wire::put_u64(buf, v.size());
  for (const auto& s : v) wire::put_str(buf, s);
}
std::vector<std::string> read_strings(wire::Reader& r) {
  const std::uint64_t n = r.u64();
  if (n > r.buf.size())
    throw wire::Malformed(fmt::format("a list of {} strings in {} bytes", n, r.buf.size()));
  std::vector<std::string> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(r.str());
  return v;
}

// Every configuration field a plan may depend on, as one string.
std::string config_key(const ModelConfig& c) {
  std::string kinds;
  for (BlockKind k : c.layer_kinds) kinds += block_kind_name(k), kinds += ',';
  std::string factors;
  for (double f : c.rope_freq_factors) factors += fmt::format("{},", f);
  return fmt::format(
      "{}|{}|{}|{} {} {} {} {} {} {} {} {} {} {} {} {} {} {}|{}{}{}{}{}{}{}{}|{} {} {} {} {} {} {}|{}|{}|{}",
      c.name, c.arch, family_name(c.family), c.n_layers, c.hidden, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn,
      c.vocab, c.max_positions, c.sliding_window, c.rope_theta, c.norm_eps, c.partial_rotary,
      rope_mode_name(c.rope_mode), c.conv_kernel, c.full_attention_interval, c.qk_rows_permuted, c.qkv_bias,
      c.o_bias, c.mlp_bias, c.qk_norm, c.tied_embeddings, c.norm_plus_one, c.attn_scale_divide, c.gdn_k_heads,
      c.gdn_v_heads, c.gdn_k_dim, c.gdn_v_dim, gdn_head_map_name(c.gdn_head_map), int(c.gdn_state_layout),
      int(c.conv_state_len), c.gdn_fused.str(), kinds, factors);
}

std::vector<BlockKind> kinds_of(const ModelConfig& cfg) {
  std::vector<BlockKind> kinds = {BlockKind::embed, BlockKind::head};
  for (BlockKind k : cfg.layer_kinds)
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  return kinds;
}

}  // namespace

namespace {

void put_info(std::string& out, const PluginInfo& i) {
  for (const std::string& s : {i.path, i.sha256, i.plugin_version, i.sdk_version}) wire::put_str(out, s);
  put_strings(out, i.names);
}

PluginInfo read_info(wire::Reader& r) {
  PluginInfo info;
  info.path = r.str();
  info.sha256 = r.str();
  info.plugin_version = r.str();
  info.sdk_version = r.str();
  info.names = read_strings(r);
  return info;
}

}  // namespace

PluginInfo PluginCandidate::probe(const std::string& path) {
  const std::string reply = probe_forked(path, "open plugin", [](const PluginLibrary& lib) {
    std::string out;
    put_info(out, lib.info());
    return out;
  });
  return read_answer("open plugin", [&] {
    wire::Reader r{reply};
    return read_info(r);
  });
}

PluginCandidate::PluginCandidate(const std::string& path, const std::string& name)
    : path_(path), name_(name) {
  // One probe: what the file is, which candidate (the only one when no name is given), and its
  // metadata.
  const std::string reply = probe_forked(path, "open plugin", [&](const PluginLibrary& lib) {
    const PluginInfo i = lib.info();
    std::string which = name;
    if (which.empty()) {
      if (i.names.size() != 1)
        throw PluginError(fmt::format("plugin {} registers {} candidates ({}): pick one with {}:NAME", path,
                                      i.names.size(), fmt::join(i.names, ", "), path));
      which = i.names.front();
    }
    const CandidatePtr c = lib.make(which);
    std::string out;
    put_info(out, i);
    wire::put_str(out, which);
    wire::put_str(out, c->description());
    wire::put_u64(out, std::uint64_t(c->storage_dtype()));
    std::vector<std::string> ops;
    for (Op op : c->capabilities().list()) ops.emplace_back(op_name(op));
    put_strings(out, ops);
    wire::put_str(out, c->unavailable());
    std::uint64_t batched = 0, order_varies = 0;  // one bit per block kind
    for (std::uint64_t k = 0; k <= std::uint64_t(BlockKind::head); ++k) {
      if (c->batches(BlockKind(k))) batched |= std::uint64_t(1) << k;
      if (c->batch_order_varies(BlockKind(k))) order_varies |= std::uint64_t(1) << k;
    }
    wire::put_u64(out, batched);
    wire::put_u64(out, order_varies);
    const MoeLimits limits = c->moe_limits();
    wire::put_u64(out, std::uint64_t(std::max(limits.max_top_k, 0)));
    wire::put_u64(out, std::uint64_t(std::max(limits.max_experts, 0)));
    return out;
  });
  std::uint64_t dtype = 0;
  read_answer("open plugin", [&] {
    wire::Reader r{reply};
    info_ = read_info(r);
    name_ = r.str();
    description_ = r.str();
    dtype = r.u64();
    for (const std::string& op : read_strings(r)) {
      const auto parsed = parse_op(op);
      if (!parsed) throw wire::Malformed(fmt::format("an op '{}' no driftscope knows", op));
      caps_.add(*parsed);
    }
    unavailable_ = r.str();
    batched_kinds_ = r.u64();
    order_varies_kinds_ = r.u64();
    const std::uint64_t top_k = r.u64(), experts = r.u64();
    if (top_k > std::uint64_t(std::numeric_limits<int>::max()) ||
        experts > std::uint64_t(std::numeric_limits<int>::max()))
      throw wire::Malformed(fmt::format("MoE limits {} / {} out of range", top_k, experts));
    moe_limits_ = {int(top_k), int(experts)};
  });
  if (dtype > std::uint64_t(DType::i32))
    throw PluginError(
        fmt::format("plugin {}: candidate '{}' declares an unknown storage dtype {}", path, name_, dtype));
  storage_ = DType(dtype);
}

PluginCandidate::~PluginCandidate() {
  // The candidate's code lives in the library: destroy it before anything else goes.
  real_.reset();
}

std::vector<KernelStep> PluginCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  if (real_) return real_->plan(cfg, kind);
  const std::string key = config_key(cfg);
  if (key != plans_key_ || !plans_.count(kind)) {
    const std::vector<BlockKind> kinds = [&] {
      auto k = kinds_of(cfg);
      if (std::find(k.begin(), k.end(), kind) == k.end()) k.push_back(kind);
      return k;
    }();
    const std::string reply = probe_forked(path_, "plan", [&](const PluginLibrary& lib) {
      const CandidatePtr c = lib.make(name_);
      std::string out;
      wire::put_u64(out, kinds.size());
      for (BlockKind k : kinds) {
        const std::vector<KernelStep> steps = c->plan(cfg, k);
        wire::put_u64(out, std::uint64_t(k));
        wire::put_u64(out, steps.size());
        for (const KernelStep& s : steps) {
          wire::put_str(out, s.name);
          put_strings(out, s.inputs);
          put_strings(out, s.outputs);
        }
      }
      return out;
    });
    std::map<BlockKind, std::vector<KernelStep>> plans = read_answer("plan", [&] {
      wire::Reader r{reply};
      std::map<BlockKind, std::vector<KernelStep>> read;
      for (std::uint64_t n = r.u64(); n--;) {
        const std::uint64_t k = r.u64();
        if (k > std::uint64_t(BlockKind::head)) throw wire::Malformed(fmt::format("a block kind {}", k));
        auto& steps = read[BlockKind(k)];
        for (std::uint64_t m = r.u64(); m--;) {
          KernelStep s;
          s.name = r.str();
          s.inputs = read_strings(r);
          s.outputs = read_strings(r);
          steps.push_back(std::move(s));
        }
      }
      if (!read.count(kind))
        throw wire::Malformed(fmt::format("no plan for the {} blocks asked for", block_kind_name(kind)));
      return read;
    });
    plans_key_ = key;
    plans_ = std::move(plans);
  }
  return plans_.at(kind);
}

std::string checked_twin(const std::string& plugin_path) {
  namespace fs = std::filesystem;
  const fs::path p(plugin_path);
  if (p.extension() != ".so") return {};
  const fs::path twin = p.parent_path() / (p.stem().string() + "_checked.so");
  std::error_code ec;
  const auto twin_time = fs::last_write_time(twin, ec);
  if (ec) return {};
  const auto plugin_time = fs::last_write_time(p, ec);
  if (ec || twin_time < plugin_time) return {};
  return twin.string();
}

void PluginCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  // As the simt candidate chooses its checked kernels (serves_checked_kernels).
  const std::string twin =
      serves_checked_kernels(launch_sinks::configured()) ? checked_twin(path_) : std::string();
  lib_ = std::make_unique<PluginLibrary>(twin.empty() ? path_ : twin);
  launch_sinks::install_in_library(lib_->handle());  // kernels built on the SIMT runtime report launches
  real_ = lib_->make(name_);
  real_->load(cfg, weights);
}

void PluginCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                          TensorMap& outputs) {
  if (!real_) throw CandidateCrash(step.name, "the plugin candidate was never loaded");
  real_->run(step, ctx, inputs, outputs);
}

}  // namespace ds
