#include "dump_candidate.h"

#include <fmt/format.h>

#include <filesystem>

#include "dump_layout.h"
#include "stage_catalog.h"

namespace ds::dump {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

std::optional<DumpSpec> parse_dump_spec(std::string_view spec) {
  if (spec.substr(0, kDumpPrefix.size()) != kDumpPrefix) return std::nullopt;
  std::string rest(spec.substr(kDumpPrefix.size()));
  if (rest.empty()) throw DumpError("dump: names no directory (dump:DIR or dump:DIR:MAPPING.yaml)");
  DumpSpec d;
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos && (ends_with(rest, ".yaml") || ends_with(rest, ".yml"))) {
    d.dir = rest.substr(0, colon);
    d.mapping = rest.substr(colon + 1);
  } else {
    d.dir = rest;
    d.mapping = (std::filesystem::path(rest) / "mapping.yaml").string();
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(d.dir, ec))
    throw DumpError(fmt::format("dump:{}: {} is not a directory", rest, d.dir));
  return d;
}

DumpCandidate::DumpCandidate(const DumpSpec& spec)
    : name_(fmt::format("{}{}", kDumpPrefix, spec.dir)), mapping_(load_mapping(spec.mapping, spec.dir)) {}

std::string DumpCandidate::description() const {
  return fmt::format("tensors another engine dumped into {}, read through {} ({} stage(s) mapped, {} absent)",
                     mapping_.dir, mapping_.path, mapping_.stages.size(), mapping_.absent.size());
}

OpSet DumpCandidate::capabilities() const {
  OpSet all;
  for (int i = 0; i < int(Op::kCount); ++i) all.add(Op(i));
  return all;
}

std::vector<KernelStep> DumpCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  std::vector<KernelStep> steps;
  for (const std::string& s : expected_stages(cfg, kind))
    if (mapping_.stages.count(s)) steps.push_back({fmt::format("{}{}", kDumpPrefix, s), {}, {s}});
  return steps;
}

void DumpCandidate::load(const ModelConfig&, const WeightStore&) {}

const TensorFile& DumpCandidate::file(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) it = files_.emplace(path, TensorFile::open(path)).first;
  return *it->second;
}

DumpCandidate::Where DumpCandidate::where(const std::string& stage, int step, int layer) const {
  const Source& src = mapping_.stages.at(stage);
  Where w;
  w.path = (std::filesystem::path(mapping_.dir) / expand(src.file, step, layer)).string();
  w.tensor = expand(src.tensor, step, layer);
  const std::string at =
      layer == kModelLayer ? fmt::format("step {}", step) : fmt::format("layer {}, step {}", layer, step);
  w.what = w.tensor.empty() ? fmt::format("{} (stage {}, {})", w.path, stage, at)
                            : fmt::format("{}: tensor '{}' (stage {}, {})", w.path, w.tensor, stage, at);
  return w;
}

Tensor DumpCandidate::fetch(const ModelConfig& cfg, const std::string& stage, int step, int layer, int pos0,
                            int n_tokens, bool header_only) const {
  const Where w = where(stage, step, layer);
  // The file readers name the file and tensor; the run needs to say which stage wanted it.
  auto wanted = [&](auto&& read) -> decltype(auto) {
    try {
      return read();
    } catch (const DumpError& e) {
      throw DumpError(fmt::format("{} (wanted for stage {} of {})", e.what(), stage,
                                  layer == kModelLayer ? fmt::format("step {}", step)
                                                       : fmt::format("layer {} at step {}", layer, step)));
    }
  };
  const TensorFile& f = wanted([&]() -> const TensorFile& { return file(w.path); });
  if (!f.has(w.tensor)) {
    const auto names = f.names();
    throw DumpError(fmt::format("{}: no such tensor in the file (it holds {} tensor(s){}{})", w.what,
                                names.size(), names.empty() ? "" : ", e.g. ",
                                names.empty() ? "" : names.front()));
  }
  const Source& src = mapping_.stages.at(stage);
  if (header_only) {
    (void)pick_rows(wanted([&] { return f.shape(w.tensor); }), src, cfg, stage, pos0, n_tokens, w.what);
    return {};
  }
  Tensor t = wanted([&] { return f.read(w.tensor); });
  if (!is_float(t.dtype())) throw DumpError(fmt::format("{}: holds integers, not activations", w.what));
  return to_catalog(t, src, cfg, stage, pos0, n_tokens, w.what).to(mapping_.storage);
}

void DumpCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap&,
                        TensorMap& outputs) {
  for (const std::string& stage : step.outputs)
    outputs[stage] = fetch(*ctx.config, stage, ctx.step, ctx.layer, ctx.pos0, ctx.n_tokens, false);
}

std::optional<std::vector<int>> DumpCandidate::tokens() const {
  // Without a tokens entry, a tokens.npy beside the dump is the prompt (what most dumpers write).
  Source src;
  std::error_code ec;
  if (mapping_.tokens)
    src = *mapping_.tokens;
  else if (std::filesystem::exists(std::filesystem::path(mapping_.dir) / "tokens.npy", ec))
    src.file = "tokens.npy";
  else
    return std::nullopt;
  const std::string path = (std::filesystem::path(mapping_.dir) / src.file).string();
  const std::string what = src.tensor.empty() ? path : fmt::format("{}: tensor '{}'", path, src.tensor);
  const TensorFile& f = file(path);
  if (!f.has(src.tensor)) throw DumpError(fmt::format("{}: no such tensor in the file", what));
  const Tensor t = f.read(src.tensor);
  if (t.dtype() != DType::i32)
    throw DumpError(fmt::format("{}: token ids are integers, not {}", what, dtype_name(t.dtype())));
  // [T] or a batch of one [1, T].
  if (t.shape().empty() || t.numel() == 0 || t.numel() != t.shape().back())
    throw DumpError(fmt::format("{}: shape {} is not one prompt of token ids ([T] or [1, T])", what,
                                shape_str(t.shape())));
  return std::vector<int>(t.data<std::int32_t>(), t.data<std::int32_t>() + t.numel());
}

void DumpCandidate::preflight(const ModelConfig& cfg, const std::vector<std::pair<int, int>>& steps) const {
  // In the order the run reads them, so the first error is the one the run would have hit.
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto check = [&](BlockKind kind, int layer) {
      for (const KernelStep& ks : plan(cfg, kind))
        (void)fetch(cfg, ks.outputs.front(), int(s), layer, steps[s].first, steps[s].second, true);
    };
    check(BlockKind::embed, kModelLayer);
    for (int l = 0; l < cfg.n_layers; ++l) check(cfg.block_kind(l), l);
    check(BlockKind::head, kModelLayer);
  }
}

}  // namespace ds::dump
