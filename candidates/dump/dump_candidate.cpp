#include "dump_candidate.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "dump_layout.h"
#include "user_file.h"
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
    std::error_code ec;
    const auto own = std::filesystem::path(rest) / "mapping.yaml";
    if (std::filesystem::exists(own, ec)) d.mapping = own.string();
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(d.dir, ec))
    throw DumpError(fmt::format("dump:{}: {} is not a directory", rest, d.dir));
  return d;
}

DumpCandidate::DumpCandidate(const DumpSpec& spec)
    : name_(fmt::format("{}{}", kDumpPrefix, spec.dir)), dir_(spec.dir) {
  if (!spec.mapping.empty()) {
    mapping_ = load_mapping(spec.mapping, spec.dir);
    settle_storage();
  }
}

void DumpCandidate::settle_storage() const {
  if (mapping_->storage_auto) mapping_->storage = stored_dtype();
}

DType DumpCandidate::stored_dtype() const {
  // The embedding where it is mapped (every engine writes it in its activation dtype), else the
  // first mapped stage found at step 0, layer 0.
  const Mapping& map = mapping();
  std::vector<std::string> order{"embed"};
  for (const auto& [stage, src] : map.stages) order.push_back(stage);
  for (const std::string& stage : order) {
    if (!map.stages.count(stage)) continue;
    const Where w = where(stage, 0, 0);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(w.path, ec)) continue;
    const TensorFile& f = file(w.path);
    if (!f.has(w.tensor)) continue;
    const DType t = f.read(w.tensor).dtype();
    if (!is_float(t))
      throw DumpError(fmt::format("{}: storage: auto: holds integers, not activations", w.what));
    return t;
  }
  throw DumpError(fmt::format(
      "{}: storage: auto: no mapped stage has a tensor at step 0 to take the dtype from", map.path));
}

std::string DumpCandidate::description() const {
  if (!mapping_)
    return fmt::format(
        "tensors another engine dumped into {}, read through the shipped mapping of its engine "
        "and the model's family",
        dir_);
  return fmt::format(
      "tensors another engine dumped into {}, read through {} ({} stage(s) mapped, {} absent, storage {}{})",
      mapping_->dir, mapping_->path, mapping_->stages.size(), mapping_->absent.size(),
      dtype_name(mapping_->storage), mapping_->storage_auto ? " as dumped" : "");
}

const Mapping& DumpCandidate::mapping() const {
  if (!mapping_) throw std::logic_error("dump candidate used before settle() chose its mapping");
  return *mapping_;
}

std::string DumpCandidate::settle(const ModelConfig& cfg) const {
  if (mapping_) return "";
  // The layouts the shipped dumpers write: llama.cpp one directory per decode call of .npy files,
  // HF transformers one safetensors file per forward call.
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string engine;
  if (fs::is_directory(fs::path(dir_) / "step0", ec))
    engine = "llama.cpp";
  else if (fs::is_regular_file(fs::path(dir_) / "step0.safetensors", ec))
    engine = "hf";
  else
    throw DumpError(
        fmt::format("dump:{}: no mapping.yaml, and neither step0/ (llama.cpp's dumper) nor "
                    "step0.safetensors (tools/dump_hf.py) to choose a shipped mapping by: name one, "
                    "dump:{}:MAPPING.yaml (docs/dumps.md)",
                    dir_, dir_));
  const std::string file = fmt::format("{}-{}.yaml", engine, family_name(cfg.family));
  for (const ShippedMapping& m : shipped_mappings())
    if (m.file == file) {
      mapping_ =
          load_mapping_text(std::string(m.text), fmt::format("fixtures/dumps/{} (shipped)", file), dir_);
      chosen_ = fmt::format(
          "; read through the shipped fixtures/dumps/{}, since {} has no mapping.yaml: name yours with "
          "dump:DIR:MAPPING.yaml",
          file, dir_);
      settle_storage();
      return fmt::format(
          "dump:{}: no mapping.yaml there; chose the shipped fixtures/dumps/{} ({} dump of a {} "
          "model)",
          dir_, file, engine, family_name(cfg.family));
    }
  throw DumpError(
      fmt::format("dump:{}: no mapping.yaml, and no shipped mapping for a {} dump of a {} model "
                  "(fixtures/dumps/ has none named {}): write one (docs/dumps.md)",
                  dir_, engine, family_name(cfg.family), file));
}

OpSet DumpCandidate::capabilities() const {
  OpSet all;
  for (int i = 0; i < int(Op::kCount); ++i) all.add(Op(i));
  return all;
}

std::vector<KernelStep> DumpCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  (void)settle(cfg);
  std::vector<KernelStep> steps;
  for (const std::string& s : expected_stages(cfg, kind))
    if (mapping().stages.count(s)) steps.push_back({fmt::format("{}{}", kDumpPrefix, s), {}, {s}});
  return steps;
}

void DumpCandidate::load(const ModelConfig&, const WeightStore&) {}

const TensorFile& DumpCandidate::file(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) it = files_.emplace(path, TensorFile::open(path)).first;
  return *it->second;
}

DumpCandidate::Where DumpCandidate::where(const std::string& stage, int step, int layer) const {
  const Source& src = mapping().stages.at(stage);
  Where w;
  w.path = (std::filesystem::path(mapping().dir) / expand(src.file, step, layer)).string();
  w.tensor = expand(src.tensor, step, layer);
  const std::string at =
      layer == kModelLayer ? fmt::format("step {}", step) : fmt::format("layer {}, step {}", layer, step);
  w.what = w.tensor.empty() ? fmt::format("{} (stage {}, {})", w.path, stage, at)
                            : fmt::format("{}: tensor '{}' (stage {}, {})", w.path, w.tensor, stage, at);
  return w;
}

std::string DumpCandidate::source_of(const std::string& stage, int step, int layer) const {
  return mapping_ && mapping_->stages.count(stage) ? where(stage, step, layer).what : std::string();
}

Tensor DumpCandidate::fetch(const ModelConfig& cfg, const std::string& stage, int step, int layer, int pos0,
                            int n_tokens, bool header_only) const {
  const Where w = where(stage, step, layer);
  // The file readers name the file and tensor; the run needs to say which stage wanted it.
  auto wanted = [&](auto&& read) -> decltype(auto) {
    try {
      return read();
    } catch (const DumpError& e) {
      throw DumpError(fmt::format("{} (wanted for stage {} of {}{})", e.what(), stage,
                                  layer == kModelLayer ? fmt::format("step {}", step)
                                                       : fmt::format("layer {} at step {}", layer, step),
                                  chosen_.empty() ? "" : chosen_));
    }
  };
  // A source the dump lacks is a stage the engine did not write (under that name): the reference
  // can stand in for it (--fill reference: missing_sources(), unmap()).
  const auto lacking = [&](std::string_view what) {
    return DumpError(fmt::format(
        "{}: {}, so stage {} cannot be judged. Run with --fill reference to fill it from the reference "
        "(shown "
        "`filled`, never judged), or map {} to the tensor the engine wrote, or declare it `absent:` in {}{}",
        w.what, what, stage, stage, mapping().path, chosen_));
  };
  std::error_code ec;
  if (!std::filesystem::exists(w.path, ec)) throw lacking("no such file in the dump");
  const TensorFile& f = wanted([&]() -> const TensorFile& { return file(w.path); });
  if (!f.has(w.tensor)) {
    const auto names = f.names();
    throw lacking(fmt::format("no such tensor in the file (it holds {} tensor(s){}{})", names.size(),
                              names.empty() ? "" : ", e.g. ", names.empty() ? "" : names.front()));
  }
  const Source& src = mapping().stages.at(stage);
  if (header_only) {
    (void)pick_rows(wanted([&] { return f.shape(w.tensor); }), src, cfg, stage, pos0, n_tokens, w.what);
    return {};
  }
  Tensor t = wanted([&] { return f.read(w.tensor); });
  if (!is_float(t.dtype())) throw DumpError(fmt::format("{}: holds integers, not activations", w.what));
  return to_catalog(t, src, cfg, stage, pos0, n_tokens, w.what).to(mapping().storage);
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
  if (mapping().tokens)
    src = *mapping().tokens;
  else if (std::filesystem::exists(std::filesystem::path(dir_) / "tokens.npy", ec))
    src.file = "tokens.npy";
  else
    return std::nullopt;
  const std::string path = (std::filesystem::path(dir_) / src.file).string();
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

std::vector<int> DumpCandidate::engine_choices() const {
  const std::filesystem::path path = std::filesystem::path(dir_) / "greedy.txt";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const std::string text = read_user_text<DumpError>(path.string(), 1 << 20, "greedy tokens file");
  std::vector<int> ids;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, end - at);
    item.erase(0, item.find_first_not_of(" \t\r\n"));
    item.erase(item.find_last_not_of(" \t\r\n") + 1);
    int id = -1;
    const auto [p, err] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (err != std::errc() || p != item.data() + item.size() || id < 0)
      throw DumpError(
          fmt::format("{}: '{}' is not a token id (expected ids separated by commas)", path.string(), item));
    ids.push_back(id);
    at = end + 1;
  }
  return ids;
}

std::vector<std::pair<std::string, std::string>> DumpCandidate::missing_sources(const ModelConfig& cfg,
                                                                                int steps) const {
  std::vector<std::pair<std::string, std::string>> out;
  auto check = [&](BlockKind kind, int step, int layer) {
    for (const KernelStep& ks : plan(cfg, kind)) {
      const std::string& stage = ks.outputs.front();
      if (std::any_of(out.begin(), out.end(), [&](const auto& m) { return m.first == stage; })) continue;
      const Where w = where(stage, step, layer);
      std::error_code ec;
      bool lacking = !std::filesystem::exists(w.path, ec);
      if (!lacking && !w.tensor.empty()) try {
          lacking = !file(w.path).has(w.tensor);
        } catch (const DumpError&) {
          // A file that does not open is corrupt, not missing: preflight() says why.
        }
      if (lacking) out.emplace_back(stage, w.what);
    }
  };
  for (int s = 0; s < steps; ++s) {
    check(BlockKind::embed, s, kModelLayer);
    for (int l = 0; l < cfg.n_layers; ++l) check(cfg.block_kind(l), s, l);
    check(BlockKind::head, s, kModelLayer);
  }
  return out;
}

void DumpCandidate::unmap(const std::string& stage) const { mapping_->stages.erase(stage); }

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
