#include "registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "closest_name.h"
#include "cpu/cpu_candidate.h"
#include "dump/dump_candidate.h"
#include "plugin/plugin_candidate.h"
#include "python/python_candidate.h"
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
#include "gpu/cuda_kernels.h"
#include "gpu/gpu_candidate.h"
#include "gpu/mutants.h"
#endif

namespace ds {

namespace {
struct Factory {
  std::string name;
  std::function<CandidatePtr()> make;
};

const std::vector<Factory>& factories() {
  static const std::vector<Factory> f = [] {
    std::vector<Factory> v = {
        {"cpu-f16", [] { return std::make_unique<cpu::CpuCandidate>(); }},
        {"cpu-f16-v1", [] { return cpu::CpuCandidate::v1_ops(); }},
    };
    for (const cpu::CpuVariant& p : cpu::planted_variants())
      v.push_back({p.name, [bug = p.bug] { return std::make_unique<cpu::CpuCandidate>(bug); }});
#if defined(DRIFTSCOPE_HAVE_SIMT_KERNELS)
    v.push_back({"simt", [] {
                   return std::make_unique<gpu::GpuCandidate>(
                       dsk_simt::table(), "simt",
                       "the fused CUDA kernels of kernels/*.cu run on the CPU through the SIMT runtime (f16 "
                       "storage): every family, Qwen3-Next's GDN layers with the plain and fused decode ops "
                       "A-D (--gdn-variant)");
                 }});
    v.push_back(
        {"simt-gdn-plain", [] {
           return std::make_unique<gpu::GpuCandidate>(
               dsk_simt::table(), "simt-gdn-plain",
               "simt declaring only the plain GDN ops (GatedDeltaNet, SsmConv): the gate must refuse a "
               "fused --gdn-variant",
               false);
         }});
    for (const auto& m : gpu::gdn_mutants()) {
      v.push_back({fmt::format("mutant:{}", m.name), [&m] {
                     return std::make_unique<gpu::GpuCandidate>(
                         [&m](std::string& why) { return gpu::mutant_kernels(m.name, why); }, "simt",
                         fmt::format("mutant:{}", m.name),
                         fmt::format("simt with a planted GDN bug: {}", std::string(m.what)));
                   }});
    }
#if defined(DRIFTSCOPE_HAVE_CUDA_KERNELS)
    // cuda_kernels() opens (or builds) the module: when the candidate loads, never when it is listed.
    v.push_back({"cuda", [] {
                   return std::make_unique<gpu::GpuCandidate>(
                       gpu::cuda_kernels, "cuda", "cuda",
                       "the fused CUDA kernels of kernels/*.cu compiled by nvcc, on a GPU: every family simt "
                       "serves");
                 }});
#endif
    for (const auto& m : gpu::mutants()) {
      v.push_back({fmt::format("mutant:{}", m.name), [&m] {
                     return std::make_unique<gpu::GpuCandidate>(
                         [&m](std::string& why) { return gpu::mutant_kernels(m.name, why); }, "simt",
                         fmt::format("mutant:{}", m.name),
                         fmt::format("simt with a planted bug: {}", std::string(m.what)));
                   }});
    }
#endif
    return v;
  }();
  return f;
}

// Names kept for scripts written when one candidate served Qwen3-Next apart from the others.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {{"simt-gdn", "simt"},
                                                                      {"cuda-gdn", "cuda"}};

}  // namespace

std::vector<CandidateAlias> list_candidate_aliases() {
  std::vector<CandidateAlias> out;
  for (const auto& [alias, target] : kAliases)
    for (const auto& f : factories())
      if (f.name == target) out.push_back({std::string(alias), std::string(target)});
  return out;
}

std::vector<CandidateEntry> list_candidates() {
  std::vector<CandidateEntry> out;
  for (const auto& f : factories()) out.push_back({f.name, f.make()->description()});
  return out;
}

CandidatePtr make_candidate(std::string_view name) {
  if (const auto d = dump::parse_dump_spec(name)) return std::make_unique<dump::DumpCandidate>(*d);
  if (const auto plugin = parse_plugin_spec(name))
    return std::make_unique<PluginCandidate>(plugin->path, plugin->name);
  if (const auto py = parse_python_spec(name)) return std::make_unique<PythonCandidate>(py->path, py->name);
  std::string_view target = name;
  for (const auto& [alias, to] : kAliases)
    if (alias == name) target = to;
  std::vector<std::string> known;
  for (const auto& f : factories()) {
    if (f.name == target) return f.make();
    known.push_back(f.name);
  }
  throw std::invalid_argument(
      fmt::format("unknown candidate '{}'{} (known: {}; or a plugin: PATH.so or PATH.so:NAME; or a Python "
                  "candidate: py:FILE.py or py:FILE.py:NAME; or an engine's tensor dumps: dump:DIR)",
                  name, did_you_mean(name, known), fmt::join(known, ", ")));
}

std::vector<std::string> expand_candidate_spec(std::string_view spec) {
  if (const auto py = parse_python_spec(spec); py && py->name.empty()) {
    std::vector<std::string> out;
    for (const std::string& n : PythonCandidate::names(py->path))
      out.push_back(fmt::format("py:{}:{}", py->path, n));
    return out;
  }
  const auto plugin = parse_plugin_spec(spec);
  if (!plugin || !plugin->name.empty()) return {std::string(spec)};
  std::vector<std::string> out;
  for (const std::string& n : PluginCandidate::probe(plugin->path).names)
    out.push_back(fmt::format("{}:{}", plugin->path, n));
  return out;
}

bool runs_foreign_code(std::string_view spec) {
  return parse_plugin_spec(spec).has_value() || parse_python_spec(spec).has_value();
}

std::optional<PluginInfo> plugin_origin(const Candidate& cand) {
  if (const auto* p = dynamic_cast<const PluginCandidate*>(&cand)) return p->info();
  if (const auto* p = dynamic_cast<const PythonCandidate*>(&cand)) return p->info();
  return std::nullopt;
}

std::string memcheck_blind_spot(std::string_view name) {
  if (dump::parse_dump_spec(name)) return "an engine's dump replays outputs: it runs no kernel";
  // A plugin may be linked against checked kernels itself, or have a checked twin: only its run
  // tells (each launch says whether memcheck could look into it).
  if (parse_plugin_spec(name)) return "";
  if (parse_python_spec(name))
    return "a Python candidate's code runs in Python (numpy, torch, Triton's interpreter), not on the SIMT "
           "runtime, whose loads and stores memcheck checks";
  std::string_view target = name;
  for (const auto& [alias, to] : kAliases)
    if (alias == name) target = to;
  if (target == "simt" || target == "simt-gdn-plain") return "";
  if (target == "cuda") return "cuda runs on a GPU, where compute-sanitizer --tool memcheck is the checker";
  if (target.starts_with("mutant:") &&
      std::none_of(cpu::planted_variants().begin(), cpu::planted_variants().end(),
                   [&](const cpu::CpuVariant& v) { return v.name == target; }))
    return fmt::format("{}'s kernels are built without the CHECKED flavour (only simt's own are)", name);
  return fmt::format("{} does not run on the SIMT runtime, whose loads and stores memcheck checks", name);
}

bool simt_blocks_race_free(std::string_view name) {
  for (const auto& [alias, to] : kAliases)
    if (alias == name) name = to;
  return name == "simt" || name == "simt-gdn-plain";
}

CandidatePtr make_fill_candidate(DType storage) { return cpu::CpuCandidate::fill(storage); }

}  // namespace ds
