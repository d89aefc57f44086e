#include "load_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "loaders/gguf.h"
#include "loaders/hf.h"
#include "shapes.h"
#include "synthetic.h"

namespace ds::ref {

namespace fs = std::filesystem;

namespace {
bool has_gguf_magic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

Model load(std::string_view spec, std::uint64_t seed, int layers, const LoadOptions& options) {
  constexpr std::string_view kSynthetic = "synthetic:";
  const std::string s(spec);
  if (spec.substr(0, kSynthetic.size()) == kSynthetic) {
    try {
      return make_synthetic(spec.substr(kSynthetic.size()), seed, layers);
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
  if (!fs::exists(p, ec)) throw ModelError(fmt::format("{}: no such file or directory (expected a .gguf file, an HF directory or synthetic:<preset>)", s));
  if (p.extension() == ".gguf" || has_gguf_magic(p)) return load_gguf(s, layers, options);
  throw ModelError(fmt::format("{}: not a .gguf file, a directory with config.json, or synthetic:<preset>", s));
}
}  // namespace

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

}  // namespace ds::ref
