// The mapping file of a dump (docs/dumps.md): which file and tensor of another engine's dump
// holds which catalog stage at which model step and layer, and how to bring it to the catalog's
// layout ([tokens, width] rows, HF head order).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.h"

namespace ds::dump {

// Which rows of the dumped tensor belong to this model step.
enum class Rows {
  all,        // exactly this step's tokens (an engine dumping each forward pass)
  positions,  // every position so far: rows [pos0, pos0 + tokens) (a cache, or a full recompute)
  last,       // the last `tokens` rows
};

struct Source {
  std::string file;            // pattern relative to the dump directory: {step}, {layer}
  std::string tensor;          // pattern; "" for a .npy file (one tensor)
  std::vector<int> transpose;  // axis order applied first (NumPy's transpose), empty: none
  std::string split;           // "qkv": the tensor is [q | k | v] on its last axis; take this stage's part
  std::string unpermute;       // "q" / "k": undo llama.cpp's Q/K row permutation (NORMAL RoPE)
  Rows rows = Rows::all;
  // A known factor between the engine's tensor and the catalog stage (catalog = dumped * scale):
  // a number, or "1/sqrt(d_k)" / "1/sqrt(head_dim)" of the model. "" for none.
  std::string scale;
  // The shape `driftscope export` writes the tensor in, axis by axis: a product of `T` (the
  // token rows it holds), model dimensions (export_shape.h) and positive integers, e.g.
  // {"T", "heads", "head_dim"}. Empty: the mapping's `shapes` default. Reading ignores it.
  std::vector<std::string> shape;
};

// How `driftscope export` shapes the tensors it writes where a stage gives no `shape`.
enum class Shapes {
  rows,   // [T, W] (state stages: the catalog's 2-D shape)
  batch,  // [1, T, W], a batch of one (torch); state stages as `rows`
  ggml,   // [T, W] and every written shape without its leading 1-dims (ggml's trailing ne of 1
          // that a dumper of `reversed(ne)` drops): [W] for one token, [heads, head_dim]
};

struct Mapping {
  std::string path;  // the mapping file, for messages
  std::string dir;   // the dump directory; file patterns are relative to it
  DType storage = DType::f32;
  bool storage_auto = false;             // `storage: auto`: the dtype the dump's tensors are stored in
  // `numerics:`: how the engine computes (numerics.h: a profile name or key=value pairs), so its
  // noise floor models it; "" for the default of the storage dtype. Checked when parsed.
  std::string numerics;
  Shapes shapes = Shapes::rows;          // `shapes:`, for export
  std::optional<Source> tokens;          // the prompt the engine was fed
  std::map<std::string, Source> stages;  // catalog stage -> where it is
  std::set<std::string> absent;          // stages the engine does not dump: filled by the reference
};

// Parses and checks `mapping_path`; throws DumpError naming the file and the key.
Mapping load_mapping(const std::string& mapping_path, const std::string& dir);
// The same from YAML text; `name` stands for the file in messages.
Mapping load_mapping_text(const std::string& yaml, const std::string& name, const std::string& dir);

// The mappings shipped in fixtures/dumps/, compiled in: file name and text.
struct ShippedMapping {
  std::string_view file, text;
};
const std::vector<ShippedMapping>& shipped_mappings();
// "{step}" and "{layer}" replaced.
std::string expand(const std::string& pattern, int step, int layer);
// Every stage name of every block kind and the model-level ones.
const std::set<std::string>& catalog_stage_names();
std::string rows_name(Rows r);
std::string shapes_name(Shapes s);

}  // namespace ds::dump
