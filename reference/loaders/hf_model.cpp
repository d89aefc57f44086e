#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "family.h"
#include "gdn_layout.h"
#include "hf.h"
#include "safetensors.h"
#include "user_file.h"

namespace ds::ref {

namespace fs = std::filesystem;

namespace {

Tensor transposed(const Tensor& t) {
  const std::int64_t r = t.dim(0), c = t.dim(1);
  const std::size_t es = dtype_size(t.dtype());
  Tensor out(t.dtype(), {c, r});
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j)
      std::memcpy(out.raw() + std::size_t(j * r + i) * es, t.raw() + std::size_t(i * c + j) * es, es);
  return out;
}

Tensor apply(const std::string& file, const std::string& hf_name, HfTransform tr, Tensor t) {
  switch (tr) {
    case HfTransform::none: return t;
    case HfTransform::transpose:
      if (t.rank() != 2)
        throw ModelError(
            fmt::format("{}: tensor {}: expected 2 dimensions, got {}", file, hf_name, shape_str(t.shape())));
      return transposed(t);
    case HfTransform::squeeze_conv:
      if (t.rank() == 3 && t.dim(1) == 1) return t.reshaped({t.dim(0), t.dim(2)});
      if (t.rank() == 2) return t;
      throw ModelError(fmt::format("{}: tensor {}: expected [channels, 1, kernel], got {}", file, hf_name,
                                   shape_str(t.shape())));
    case HfTransform::neg_exp: {
      // Kept in f64: -exp(A_log) is not an f32 number.
      Tensor a = t.to(DType::f64);
      for (std::int64_t i = 0; i < a.numel(); ++i) a.data<double>()[i] = -std::exp(a.data<double>()[i]);
      return a;
    }
  }
  return t;
}

}  // namespace

Model load_hf(const std::string& dir, int layers, const LoadOptions& options) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string text = read_user_text<ModelError>(config_path, kMaxConfigFileBytes, "config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw ModelError(fmt::format("{}: not valid JSON: {}", config_path, e.what()));
  }
  Model m;
  m.config = hf_config(j, config_path);
  m.config.name = dir;
  if (options.gdn_head_map) m.config.gdn_head_map = *options.gdn_head_map;
  truncate_layers(m.config, layers);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw ModelError(fmt::format("{}: no *.safetensors files", dir));
  const Family family = m.config.family;
  for (const auto& file : files) {
    const std::string path = file.string();
    read_safetensors(
        path,
        [&](const std::string& name) {
          const auto c = hf_to_canonical(name, family);
          return c && c->layer < m.config.n_layers;
        },
        [&](const std::string& name, Tensor t) {
          const HfName c = *hf_to_canonical(name, family);
          if (m.weights.has(c.canonical))
            throw ModelError(fmt::format("{}: tensor {}: {} is defined twice", path, name, c.canonical));
          m.weights.put(c.canonical, apply(path, name, c.transform, std::move(t)));
        });
  }
  if (family == Family::qwen35) split_fused_gdn(m, dir);
  // HF would initialise a random head here (and only warn): a run against it judges nothing real.
  if (!m.config.tied_embeddings && !m.weights.has("output.weight"))
    throw ModelError(
        fmt::format("{}: tie_word_embeddings is false but no *.safetensors file in {} holds "
                    "lm_head.weight (transformers would initialise a random head); add the "
                    "tensor, or set tie_word_embeddings to true if the head is the embedding",
                    config_path, dir));
  m.config.tied_embeddings = !m.weights.has("output.weight");
  return m;
}

void write_hf(const Model& model, const std::string& dir) {
  fs::create_directories(dir);
  {
    std::ofstream out(fs::path(dir) / "config.json");
    out << hf_config_json(model.config).dump(2) << "\n";
    if (!out) throw ModelError(fmt::format("{}/config.json: write failed", dir));
  }
  // HF checkpoints keep GDN value heads grouped by key head; a model read from a qwen35 GGUF
  // has them tiled.
  WeightStore grouped;
  const WeightStore* weights = &model.weights;
  if (model.config.gdn_head_map == GdnHeadMap::tiled) {
    grouped = model.weights;
    reorder_gdn_value_heads(grouped, model.config, GdnHeadMap::tiled, GdnHeadMap::grouped);
    weights = &grouped;
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : weights->all()) {
    const HfName h = canonical_to_hf(name, model.config.family);
    Tensor v = t.dtype() == DType::i32 ? t.to(DType::f32) : t;
    switch (h.transform) {
      case HfTransform::none: break;
      case HfTransform::transpose: v = transposed(v); break;
      case HfTransform::squeeze_conv: v = v.reshaped({v.dim(0), 1, v.dim(1)}); break;
      case HfTransform::neg_exp:
        v = v.to(DType::f64);
        for (std::int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] = std::log(-v.data<double>()[i]);
        break;
    }
    tensors.emplace_back(h.canonical, std::move(v));
  }
  write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
}

}  // namespace ds::ref
