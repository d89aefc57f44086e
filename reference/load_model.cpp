#include "load_model.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "loaders/gguf.h"
#include "loaders/family.h"
#include "loaders/hf.h"
#include "shapes.h"
#include "synthetic.h"
#include "user_file.h"

namespace ds::ref {

namespace fs = std::filesystem;

namespace {
bool has_gguf_magic(const fs::path& p) {
  if (special_file_problem(p.string())) return false;  // the loader names it; opening a FIFO would block
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

Model load(std::string_view spec, std::uint64_t seed, int layers, const LoadOptions& options) {
  const std::string s(spec);
  if (const auto preset = synthetic_preset(spec)) {
    try {
      return make_synthetic(*preset, seed, layers);
    } catch (const std::invalid_argument& e) {
      throw ModelError(fmt::format("{}: {}", spec, e.what()));
    }
  }
  std::error_code ec;
  const fs::path p(s);
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(p / "config.json")) throw ModelError(fmt::format("{}: directory without config.json", s));
    return load_hf(s, layers, options);
  }
  if (!fs::exists(p, ec))
    throw ModelError(fmt::format(
        "{}: no such file or directory (expected a .gguf file, an HF directory or synthetic:<preset>)", s));
  refuse_special_file<ModelError>(s);
  if (p.extension() == ".gguf" || has_gguf_magic(p)) return load_gguf(s, layers, options);
  throw ModelError(
      fmt::format("{}: not a .gguf file, a directory with config.json, or synthetic:<preset>", s));
}
}  // namespace

std::optional<std::string_view> synthetic_preset(std::string_view spec) {
  constexpr std::string_view kSynthetic = "synthetic:";
  if (!spec.starts_with(kSynthetic)) return std::nullopt;
  return spec.substr(kSynthetic.size());
}

Model load_model(std::string_view spec, std::uint64_t seed, int layers, const LoadOptions& options) {
  if (layers < 0) throw ModelError(fmt::format("{}: layers = {} (must be >= 0)", spec, layers));
  Model m = load(spec, seed, layers, options);
  try {
    m.config.validate();
  } catch (const std::invalid_argument& e) {
    throw ModelError(fmt::format("{}: {}", spec, e.what()));
  }
  check_shapes(m);
  return m;
}

ModelConfig load_config(std::string_view spec, int layers, const LoadOptions& options) {
  const std::string s(spec);
  if (layers < 0) throw ModelError(fmt::format("{}: layers = {} (must be >= 0)", spec, layers));
  ModelConfig c;
  std::error_code ec;
  const fs::path p(s);
  if (const auto preset = synthetic_preset(spec)) {
    try {
      c = synthetic_config(*preset);
    } catch (const std::invalid_argument& e) {
      throw ModelError(fmt::format("{}: {}", spec, e.what()));
    }
    truncate_layers(c, layers);
  } else if (fs::is_directory(p, ec)) {
    const fs::path cfg = p / "config.json";
    if (!fs::exists(cfg, ec)) throw ModelError(fmt::format("{}: directory without config.json", s));
    const std::string text = read_user_text<ModelError>(cfg.string(), kMaxConfigFileBytes, "config.json");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      throw ModelError(fmt::format("{}: not valid JSON: {}", cfg.string(), e.what()));
    }
    c = hf_config(j, cfg.string());
    c.name = s;
    if (options.gdn_head_map) c.gdn_head_map = *options.gdn_head_map;
    truncate_layers(c, layers);
  } else if (fs::exists(p, ec) && (p.extension() == ".gguf" || has_gguf_magic(p))) {
    c = gguf_config(s, layers, options);
  } else {
    // Same errors as a full load.
    return load_model(spec, 0, layers, options).config;
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw ModelError(fmt::format("{}: {}", spec, e.what()));
  }
  return c;
}

}  // namespace ds::ref
