#include "export_shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "dump_layout.h"
#include "tensor_files.h"

namespace ds::dump {

namespace {

std::vector<std::string_view> factors_of(std::string_view axis) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t star = axis.find('*', at);
    std::string_view f = axis.substr(at, star == std::string_view::npos ? std::string_view::npos : star - at);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    out.push_back(f);
    if (star == std::string_view::npos) return out;
    at = star + 1;
  }
}

std::optional<std::int64_t> positive_integer(std::string_view f) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || end != f.data() + f.size() || v <= 0) return std::nullopt;
  return v;
}

// What a symbol stands for in this model; 0 where the model lacks it (a dense model's d_k).
std::int64_t symbol_value(const ModelConfig& c, std::string_view s, std::int64_t tokens) {
  if (s == "T") return tokens;
  if (s == "heads") return c.n_heads;
  if (s == "kv_heads") return c.n_kv_heads;
  if (s == "head_dim") return c.head_dim;
  if (s == "hidden") return c.hidden;
  if (s == "ffn") return c.ffn;
  if (s == "vocab") return c.vocab;
  if (s == "k_heads") return c.gdn_k_heads;
  if (s == "v_heads") return c.gdn_v_heads;
  if (s == "d_k") return c.gdn_k_dim;
  if (s == "d_v") return c.gdn_v_dim;
  if (s == "conv_dim") return c.gdn_conv_dim();
  if (s == "conv_rows") return c.gdn_k_heads > 0 ? c.conv_state_rows() : 0;
  return 0;
}

Shape evaluate(const Source& src, const ModelConfig& cfg, std::int64_t tokens, const std::string& where) {
  Shape out;
  for (const std::string& axis : src.shape) {
    std::int64_t n = 1;
    for (std::string_view f : factors_of(axis)) {
      const auto v = positive_integer(f);
      const std::int64_t x = v ? *v : symbol_value(cfg, f, tokens);
      if (x <= 0)
        throw DumpError(
            fmt::format("{}: shape: the model {} has no {} (a trace made before export needed it "
                        "records none: rerun driftscope run)",
                        where, cfg.name, f));
      n *= x;
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace

const std::vector<std::string_view>& shape_symbols() {
  static const std::vector<std::string_view> names = {"T",   "heads",    "kv_heads", "head_dim", "hidden",
                                                      "ffn", "vocab",    "k_heads",  "v_heads",  "d_k",
                                                      "d_v", "conv_dim", "conv_rows"};
  return names;
}

std::optional<std::string> shape_axis_error(std::string_view axis) {
  for (std::string_view f : factors_of(axis)) {
    if (positive_integer(f)) continue;
    bool known = false;
    for (std::string_view s : shape_symbols()) known = known || f == s;
    if (!known)
      return fmt::format("'{}' in '{}' is neither a positive integer nor one of {}", f, axis,
                         fmt::join(shape_symbols(), ", "));
  }
  return std::nullopt;
}

bool is_state_stage(std::string_view stage) { return stage == "conv_state" || stage == "gdn_state"; }

Tensor to_engine_shape(const Tensor& value, const Source& src, Shapes shapes, const ModelConfig& cfg,
                       std::string_view stage, const std::string& where) {
  const bool state = is_state_stage(stage);
  const std::int64_t tokens = state ? 0 : value.dim(0);
  // `shape:` is the file's shape; the default is the catalog's, before the mapping's transpose
  // is undone. The reader applies `transpose` to the file's axes: axis i of what it reads is the
  // file's axis transpose[i].
  const std::vector<int>& axes = src.transpose;
  Shape given;
  if (!src.shape.empty()) {
    given = evaluate(src, cfg, tokens, where);
  } else if (state || value.shape().size() != 2 || axes.size() == 2) {
    // A 2-axis transpose of token rows: an engine writing [W, T]; batch or not, no third axis.
    given = value.shape();
  } else {
    given = shapes == Shapes::batch ? Shape{1, value.dim(0), value.dim(1)} : value.shape();
  }
  if (numel(given) != value.numel())
    throw DumpError(fmt::format("{}: shape [{}] is {}, {} elements, but {} holds {} ({}{})", where,
                                fmt::join(src.shape, ", "), shape_str(given), numel(given), stage,
                                value.numel(), shape_str(value.shape()),
                                state ? "" : ": T rows of the stage's width"));
  if (!axes.empty() && axes.size() != given.size())
    throw DumpError(
        fmt::format("{}: transpose [{}] has {} axes, but the written shape {} has {}: give the "
                    "file's shape (shape: [...]) so export can lay out {}",
                    where, fmt::join(axes, ", "), axes.size(), shape_str(given), given.size(), stage));
  Tensor t;
  if (axes.empty()) {
    t = value.reshaped(given);
  } else {
    Shape read(given.size());  // the shape the reader sees after its transpose
    std::vector<int> inverse(given.size());
    for (std::size_t i = 0; i < given.size(); ++i) {
      const auto a = std::size_t(axes[i]);
      inverse[a] = int(i);
      read[i] = src.shape.empty() ? given[i] : given[a];
    }
    t = transpose(value.reshaped(read), inverse);
  }
  if (shapes == Shapes::ggml) {
    Shape s = t.shape();
    while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
    t = t.reshaped(s);
  }
  return t;
}

}  // namespace ds::dump
