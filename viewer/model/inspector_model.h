// One stage's tensors, loaded on demand: the only part of the viewer that reads tensor data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heatmap_layout.h"
#include "result.h"

namespace ds::view {

class TraceModel;

struct InspectTarget {
  int step = 0;
  int layer = 0;
  std::string stage;
  Mode mode = Mode::isolated;
  bool operator==(const InspectTarget&) const = default;
};

// |diff| histogram bins: one for exact zeros, then decades 1e-12 .. 1e2 and one for larger.
inline constexpr int kErrDecadeLo = -12, kErrDecadeHi = 2;
inline constexpr int kErrBins = 2 + (kErrDecadeHi - kErrDecadeLo);

struct Inspection {
  InspectTarget target;
  int row = -1;
  std::string error;  // set when the stage has no stored tensors or reading failed
  Shape shape;
  std::int64_t rows = 0, cols = 0;  // 2-D view: the last dim is columns, the others fold into rows
  std::vector<double> ref, cand;
  std::vector<float> ratio;  // |diff| / (atol + rtol |ref|) per element: > 1 is a mismatch
  std::int64_t focus = -1;   // first mismatch, else first NaN, else the max |diff| element
  std::array<std::int64_t, kErrBins> err_hist{};
  std::vector<double> per_token;
  bool loaded() const { return error.empty() && !ref.empty(); }
};

std::string err_bin_label(int bin);  // "0", "<1e-11", ..., ">=1e2"
// Reads the tensors of one stage (and its per-token errors) and derives what the inspector shows.
Inspection inspect(const TraceModel& model, const InspectTarget& target);
// "3,17" or "3 17" -> flat index within `shape` (the 2-D view's coordinates or all dims).
std::optional<std::int64_t> parse_coordinate(const std::string& text, const Inspection& in);
std::string coordinate_str(std::int64_t flat, const Shape& shape);

// Max-pooled |diff| ratios of a window [r0, r0+nr) x [c0, c0+nc) into out_rows x out_cols bins,
// so a large tensor draws as a few thousand rects; computed when the zoom changes, not per frame.
struct DiffImage {
  std::int64_t r0 = 0, c0 = 0, nr = 0, nc = 0;
  int out_rows = 0, out_cols = 0;
  std::vector<std::uint32_t> fill;  // packed colours, row-major
};
DiffImage diff_image(const Inspection& in, std::int64_t r0, std::int64_t c0, std::int64_t nr, std::int64_t nc,
                     int max_bins);

}  // namespace ds::view
