#include "plugin_candidate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>

#include "launch_sinks.h"
#include "stage_catalog.h"
#include "wire.h"

namespace ds {

namespace {

// Opening a plugin and asking for its plans takes milliseconds; a minute is a hang.
constexpr double kProbeTimeoutS = 60;
// What ScopedPluginProbeTimeout set; probes run on the thread that makes and gates the candidate.
std::atomic<double> probe_timeout_s{kProbeTimeoutS};

// Runs `fn` in a forked child against the opened library. A PluginError there comes back as
// one here (bad file, exit 2); a crash, hang or other exception as CandidateCrash (exit 4).
std::string probe_forked(const std::string& path, const std::string& what,
                         const std::function<std::string(const PluginLibrary&)>& fn) {
  const std::string reply = wire::run_forked(what, probe_timeout_s.load(), [&]() -> std::string {
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

}  // namespace

ScopedPluginProbeTimeout::ScopedPluginProbeTimeout(double timeout_s) {
  // --timeout 0 waits forever for a step; a probe still gets its minute.
  probe_timeout_s = timeout_s > 0 && timeout_s < kProbeTimeoutS ? timeout_s : kProbeTimeoutS;
}
ScopedPluginProbeTimeout::~ScopedPluginProbeTimeout() { probe_timeout_s = kProbeTimeoutS; }

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

PluginCandidate::PluginCandidate(const std::string& path, const std::string& name) : path_(path) {
  name_ = name;
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
    set_traits(read_traits(r, [](const std::string& op) {
      throw wire::Malformed(fmt::format("an op '{}' no driftscope knows", op));
    }));
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
  return cached_plan(cfg, kind, [&](const std::vector<BlockKind>& kinds) {
    return probe_forked(path_, "plan", [&](const PluginLibrary& lib) {
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
  });
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
