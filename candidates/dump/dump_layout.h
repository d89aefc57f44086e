// Bringing a dumped tensor to the catalog's layout, and back (for `driftscope export`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dump_mapping.h"
#include "model_config.h"
#include "tensor.h"

namespace ds::dump {

// Elements per token of `stage` in this model; nullopt where the catalog has no fixed row width
// (recurrent state stages).
std::optional<std::int64_t> stage_width(const ModelConfig& cfg, std::string_view stage);
// The catalog's 2-D shape of a state stage (conv_state, gdn_state); nullopt for the others.
std::optional<Shape> state_shape(const ModelConfig& cfg, std::string_view stage);

// Which rows of a stored tensor are this step's: `rows` rows of `row_width` elements, this
// step's `width` elements start at column `part` of row `first`, `out` rows of them (the step's
// tokens, or a state stage's rows).
struct RowPick {
  std::int64_t rows = 0, row_width = 0, width = 0, first = 0, part = 0, out = 0;
};
// Checks `stored` (the shape in the file) against the stage; throws DumpError naming `where`.
RowPick pick_rows(const Shape& stored, const Source& src, const ModelConfig& cfg, std::string_view stage,
                  int pos0, int n_tokens, const std::string& where);

// The dumped tensor `t` of `stage` at a step of `n_tokens` tokens starting at `pos0`, as
// [n_tokens, width] rows in the catalog's layout, in the tensor's own dtype. `where` names the
// file and tensor in a DumpError.
Tensor to_catalog(const Tensor& t, const Source& src, const ModelConfig& cfg, std::string_view stage,
                  int pos0, int n_tokens, const std::string& where);

// The inverse for one stage's rows [n_tokens, width]: the engine's head order (and a 2-D
// transpose). Splits and row ranges are the export's to assemble (they span several stages or
// steps); export undoes transposes of any axes with the written shape (export_shape.h).
Tensor from_catalog(const Tensor& rows, const Source& src, const ModelConfig& cfg, std::string_view stage,
                    const std::string& where);

// What the mapping's `scale` of `src` stands for in this model (1 without one); throws DumpError
// naming `where` when the model lacks the dimension it names.
double scale_factor(const Source& src, const ModelConfig& cfg, const std::string& where);

// Where `stage` (q, k or v) starts in a fused [q | k | v] row; with `width`, also how wide it is.
std::int64_t split_part_offset(const ModelConfig& cfg, std::string_view stage, std::int64_t* width = nullptr);

// An axis permutation of a row-major tensor (NumPy's transpose(axes)).
Tensor transpose(const Tensor& t, const std::vector<int>& axes);

}  // namespace ds::dump
