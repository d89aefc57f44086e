#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
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

// The per-expert tensors of one stack, by expert index.
using ExpertPieces = std::map<std::string, std::vector<std::optional<Tensor>>>;

// Stacks every expert's [out, in] tensor into the canonical [experts, out, in], refusing a stack
// with an expert missing or of another shape, naming the checkpoint tensor.
void stack_experts(Model& m, ExpertPieces& pieces, const std::string& dir) {
  for (auto& [canonical, parts] : pieces) {
    const Tensor* first = nullptr;
    for (std::size_t e = 0; e < parts.size(); ++e) {
      const std::string hf = hf_expert_name(canonical, m.config.family, int(e)).value_or(canonical);
      if (!parts[e])
        throw ModelError(
            fmt::format("{}: no *.safetensors file holds {} (expert {} of {})", dir, hf, e, parts.size()));
      if (parts[e]->rank() != 2 ||
          (first && (parts[e]->shape() != first->shape() || parts[e]->dtype() != first->dtype())))
        throw ModelError(fmt::format("{}: tensor {}: shape {} {}, expert 0's is {} {}", dir, hf,
                                     shape_str(parts[e]->shape()), dtype_name(parts[e]->dtype()),
                                     first ? shape_str(first->shape()) : "[out, in]",
                                     first ? dtype_name(first->dtype()) : ""));
      if (!first) first = &*parts[e];
    }
    const std::size_t bytes = first->nbytes();
    Tensor stack(first->dtype(), {std::int64_t(parts.size()), first->dim(0), first->dim(1)});
    for (std::size_t e = 0; e < parts.size(); ++e) {
      std::memcpy(stack.raw() + e * bytes, parts[e]->raw(), bytes);
      parts[e].reset();
    }
    m.weights.put(canonical, std::move(stack));
  }
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
  ExpertPieces experts;
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
          if (c.expert >= 0) {
            if (c.expert >= m.config.n_experts)
              throw ModelError(fmt::format("{}: tensor {}: expert {} but config.json declares {} experts",
                                           path, name, c.expert, m.config.n_experts));
            auto& parts = experts[c.canonical];
            parts.resize(std::size_t(m.config.n_experts));
            if (parts[std::size_t(c.expert)])
              throw ModelError(fmt::format("{}: tensor {} is defined twice", path, name));
            parts[std::size_t(c.expert)] = std::move(t);
            return;
          }
          if (m.weights.has(c.canonical))
            throw ModelError(fmt::format("{}: tensor {}: {} is defined twice", path, name, c.canonical));
          m.weights.put(c.canonical, apply(path, name, c.transform, std::move(t)));
        });
  }
  stack_experts(m, experts, dir);
  if (is_gdn_hybrid(family)) split_fused_gdn(m, dir);
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
  if (model.config.gdn_head_map == GdnHeadMap::tiled || model.config.family == Family::qwen3next) {
    grouped = model.weights;
    reorder_gdn_value_heads(grouped, model.config, model.config.gdn_head_map, GdnHeadMap::grouped);
    weights = &grouped;
  }
  // Qwen3-Next checkpoints fuse the GDN input projections (in_proj_qkvz, in_proj_ba).
  if (model.config.family == Family::qwen3next) {
    fuse_gdn_projections(grouped, model.config);
    for (int l = 0; l < model.config.n_layers; ++l)
      for (const auto& [from, to] : {std::pair{"ssm_in.weight", "fused_qkvz.weight"},
                                     std::pair{"ssm_beta_alpha.weight", "fused_ba.weight"}})
        if (const Tensor* t = grouped.find(layer_weight(l, from))) {
          grouped.put(layer_weight(l, to), *t);
          grouped.erase(layer_weight(l, from));
        }
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : weights->all()) {
    if (t.rank() == 3 && hf_expert_name(name, model.config.family, 0)) {  // one tensor per expert
      for (std::int64_t e = 0; e < t.dim(0); ++e)
        tensors.emplace_back(*hf_expert_name(name, model.config.family, int(e)),
                             t.rows(e, e + 1).reshaped({t.dim(1), t.dim(2)}));
      continue;
    }
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
