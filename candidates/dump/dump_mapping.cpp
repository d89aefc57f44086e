#include "dump_mapping.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "export_shape.h"
#include "model_config.h"
#include "numerics.h"
#include "stage_catalog.h"
#include "tensor_files.h"
#include "user_file.h"

namespace ds::dump {

namespace {

constexpr std::size_t kMaxPattern = 1000;

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw DumpError(fmt::format("{}: {}: {}", path_, where, why));
  }

  std::string scalar(const YAML::Node& n, const std::string& where) const {
    if (!n.IsScalar()) fail(where, "expected a string");
    return n.Scalar();
  }

  std::string pattern(const YAML::Node& n, const std::string& where) const {
    std::string p = scalar(n, where);
    if (p.size() > kMaxPattern) fail(where, fmt::format("a pattern longer than {} characters", kMaxPattern));
    // Only {step} and {layer}: anything else in braces is a typo that would never match a file.
    for (std::size_t at = p.find('{'); at != std::string::npos; at = p.find('{', at + 1)) {
      const std::size_t end = p.find('}', at);
      const std::string key = end == std::string::npos ? p.substr(at) : p.substr(at, end - at + 1);
      if (key != "{step}" && key != "{layer}")
        fail(where, fmt::format("'{}' in '{}' is no placeholder ({{step}}, {{layer}})", key, p));
    }
    return p;
  }

  Source source(const YAML::Node& n, const std::string& where, bool allow_layout) const {
    Source s;
    if (n.IsScalar()) {
      // "FILE" or "FILE:TENSOR"
      // The tensor name follows the file's extension: tensor names may hold ':' themselves.
      s.file = pattern(n, where);
      for (std::string_view ext : {".safetensors:", ".npz:"})
        if (const auto at = s.file.find(ext); at != std::string::npos) {
          s.tensor = s.file.substr(at + ext.size());
          s.file.resize(at + ext.size() - 1);
          break;
        }
      return s;
    }
    if (!n.IsMap()) fail(where, "expected FILE, FILE:TENSOR or {file: ..., tensor: ...}");
    for (const auto& kv : n) {
      const std::string key = scalar(kv.first, where);
      const std::string at = fmt::format("{}.{}", where, key);
      if (key == "file") {
        s.file = pattern(kv.second, at);
      } else if (key == "tensor") {
        s.tensor = pattern(kv.second, at);
      } else if (key == "transpose" && allow_layout) {
        if (!kv.second.IsSequence() || kv.second.size() > 8) fail(at, "expected a list of axes, e.g. [1, 0]");
        for (const auto& a : kv.second) {
          int v = -1;
          try {
            v = a.as<int>();
          } catch (const YAML::Exception&) {
            fail(at, "axes are integers");
          }
          s.transpose.push_back(v);
        }
        std::vector<int> sorted = s.transpose;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < sorted.size(); ++i)
          if (sorted[i] != int(i)) fail(at, "is not a permutation of 0..rank-1");
      } else if (key == "split" && allow_layout) {
        s.split = scalar(kv.second, at);
        if (s.split != "qkv") fail(at, fmt::format("'{}' is not a known split (qkv)", s.split));
      } else if (key == "unpermute" && allow_layout) {
        s.unpermute = scalar(kv.second, at);
        if (s.unpermute != "q" && s.unpermute != "k")
          fail(at, fmt::format("'{}': expected q (n_heads) or k (n_kv_heads)", s.unpermute));
      } else if (key == "scale" && allow_layout) {
        s.scale = scalar(kv.second, at);
        if (s.scale != "1/sqrt(d_k)" && s.scale != "1/sqrt(head_dim)") {
          double v = 0;
          try {
            std::size_t used = 0;
            v = std::stod(s.scale, &used);
            if (used != s.scale.size()) v = 0;
          } catch (const std::exception&) {
          }
          if (!(v > 0) || !std::isfinite(v))
            fail(at,
                 fmt::format("'{}': expected a positive number, 1/sqrt(d_k) or 1/sqrt(head_dim)", s.scale));
        }
      } else if (key == "shape" && allow_layout) {
        if (!kv.second.IsSequence() || kv.second.size() == 0 || kv.second.size() > 8)
          fail(at, "expected a list of 1 to 8 axes, e.g. [T, heads, head_dim]");
        for (const auto& a : kv.second) {
          const std::string axis = scalar(a, at);
          if (const auto why = shape_axis_error(axis)) fail(at, *why);
          s.shape.push_back(axis);
        }
      } else if (key == "rows" && allow_layout) {
        const std::string r = scalar(kv.second, at);
        if (r == "all")
          s.rows = Rows::all;
        else if (r == "positions")
          s.rows = Rows::positions;
        else if (r == "last")
          s.rows = Rows::last;
        else
          fail(at, fmt::format("'{}': expected all, positions or last", r));
      } else {
        fail(at, allow_layout ? "unknown key (file, tensor, transpose, split, unpermute, rows, scale, shape)"
                              : "unknown key (file, tensor)");
      }
    }
    if (s.file.empty()) fail(where, "no file");
    return s;
  }

  void check_tensor_name(const Source& s, const std::string& where) const {
    const std::string ext = std::filesystem::path(s.file).extension().string();
    if (ext == ".npy" && !s.tensor.empty()) fail(where, "a .npy file holds one tensor: give no tensor name");
    if ((ext == ".npz" || ext == ".safetensors") && s.tensor.empty())
      fail(where, fmt::format("a {} file holds many tensors: name one (tensor: ...)", ext));
    if (ext != ".npy" && ext != ".npz" && ext != ".safetensors")
      fail(where, fmt::format("'{}': dump files are .npy, .npz or .safetensors", s.file));
  }

 private:
  std::string path_;
};

// A token stage's shape holds its token rows `T` on exactly one axis; a state stage has none.
void check_shape(const Source& s, const std::string& stage, const std::string& where, const Parser& p) {
  if (s.shape.empty()) return;
  if (!s.split.empty())
    p.fail(where + ".shape", "a split: qkv stage shares its fused tensor: export writes it [T, q + 2 kv]");
  int with_t = 0;
  for (const std::string& axis : s.shape)
    for (std::size_t at = axis.find('T'); at != std::string::npos; at = axis.find('T', at + 1)) ++with_t;
  if (is_state_stage(stage) && with_t)
    p.fail(where + ".shape", fmt::format("{} has no token rows: give its axes without T", stage));
  if (!is_state_stage(stage) && with_t != 1)
    p.fail(where + ".shape", "name the token rows T on exactly one axis, e.g. [T, heads, head_dim]");
}

}  // namespace

const std::set<std::string>& catalog_stage_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s;
    for (BlockKind k : {BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn, BlockKind::gated_attn,
                        BlockKind::embed, BlockKind::head})
      for (const auto& st : block_stages(k)) s.emplace(st.name);
    return s;
  }();
  return names;
}

std::string shapes_name(Shapes s) {
  return s == Shapes::rows ? "rows" : s == Shapes::batch ? "batch" : "ggml";
}

std::string rows_name(Rows r) { return r == Rows::all ? "all" : r == Rows::positions ? "positions" : "last"; }

std::string expand(const std::string& pattern, int step, int layer) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 6, "{step}") == 0) {
      out += std::to_string(step);
      i += 5;
    } else if (pattern.compare(i, 7, "{layer}") == 0) {
      out += std::to_string(layer);
      i += 6;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

Mapping load_mapping(const std::string& mapping_path, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(mapping_path, ec))
    throw DumpError(
        fmt::format("{}: no mapping file (docs/dumps.md; fixtures/dumps/ has examples)", mapping_path));
  return load_mapping_text(read_user_text<DumpError>(mapping_path, kMaxConfigFileBytes, "mapping file"),
                           mapping_path, dir);
}

Mapping load_mapping_text(const std::string& yaml, const std::string& mapping_path, const std::string& dir) {
  Parser p(mapping_path);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw DumpError(fmt::format("{}: not valid YAML: {}", mapping_path, e.what()));
  }
  if (!root.IsMap()) p.fail("top level", "expected a mapping with keys stages, absent, storage, numerics, shapes, tokens");
  Mapping m;
  m.path = mapping_path;
  m.dir = dir;
  bool have_stages = false;
  for (const auto& kv : root) {
    const std::string key = p.scalar(kv.first, "top level");
    const YAML::Node& v = kv.second;
    if (key == "engine" || key == "description") {
      continue;  // for people
    } else if (key == "storage") {
      m.storage_auto = p.scalar(v, key) == "auto";
      const auto t = m.storage_auto ? std::optional<DType>(DType::f32) : parse_dtype(v.Scalar());
      if (!t || *t == DType::i32)
        p.fail(key, fmt::format("'{}' is not a float dtype (f64, f32, f16, bf16) or auto", v.Scalar()));
      m.storage = *t;
    } else if (key == "numerics") {
      m.numerics = p.scalar(v, key);
      try {
        parse_numerics(m.numerics);
      } catch (const std::invalid_argument& e) {
        p.fail(key, e.what());
      }
    } else if (key == "shapes") {
      const std::string v_ = p.scalar(v, key);
      if (v_ == "rows")
        m.shapes = Shapes::rows;
      else if (v_ == "batch")
        m.shapes = Shapes::batch;
      else if (v_ == "ggml")
        m.shapes = Shapes::ggml;
      else
        p.fail(key, fmt::format("'{}': expected rows ([T, W]), batch ([1, T, W]) or ggml (reversed ne, "
                                "trailing 1-dims dropped)",
                                v_));
    } else if (key == "tokens") {
      m.tokens = p.source(v, key, false);
      p.check_tensor_name(*m.tokens, key);
      if (m.tokens->file.find('{') != std::string::npos) p.fail(key, "the tokens file takes no placeholder");
    } else if (key == "stages") {
      if (!v.IsMap()) p.fail(key, "expected STAGE: FILE or STAGE: {file: ..., ...}");
      have_stages = true;
      for (const auto& st : v) {
        const std::string stage = p.scalar(st.first, key);
        const std::string where = fmt::format("stages.{}", stage);
        if (!catalog_stage_names().count(stage))
          p.fail(where, "not a catalog stage name (docs/ARCHITECTURE.md#stage-catalog)");
        Source s = p.source(st.second, where, true);
        p.check_tensor_name(s, where);
        const bool layered =
            s.file.find("{layer}") != std::string::npos || s.tensor.find("{layer}") != std::string::npos;
        if (is_model_level_stage(stage) && layered) p.fail(where, "a model-level stage has no {layer}");
        if (!is_model_level_stage(stage) && !layered)
          p.fail(where, "a layer stage needs {layer} in its file or tensor name");
        if (!s.split.empty() && stage[0] != 'q' && stage[0] != 'k' && stage != "v")
          p.fail(where, "split: qkv takes the part of q, k or v (and their norm/rope stages)");
        check_shape(s, stage, where, p);
        m.stages[stage] = std::move(s);
      }
    } else if (key == "absent") {
      if (!v.IsSequence()) p.fail(key, "expected a list of stage names");
      for (const auto& a : v) {
        const std::string stage = p.scalar(a, key);
        if (!catalog_stage_names().count(stage))
          p.fail(fmt::format("absent: {}", stage), "not a catalog stage name");
        m.absent.insert(stage);
      }
    } else {
      p.fail(key, "unknown key (engine, description, storage, numerics, shapes, tokens, stages, absent)");
    }
  }
  if (!have_stages) p.fail("stages", "missing: the mapping names no stage");
  for (const std::string& a : m.absent)
    if (m.stages.count(a)) p.fail(fmt::format("absent: {}", a), "the stage is also mapped under stages");
  return m;
}

}  // namespace ds::dump
