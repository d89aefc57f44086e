#include "inspector_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "colour_map.h"
#include "trace_model.h"

namespace ds::view {

std::string err_bin_label(int bin) {
  if (bin == 0) return "0";
  if (bin == kErrBins - 1) return fmt::format(">=1e{}", kErrDecadeHi);
  return fmt::format("<1e{}", kErrDecadeLo + bin);
}

namespace {

int err_bin(double d) {
  if (d == 0) return 0;
  if (!std::isfinite(d)) return kErrBins - 1;
  const int b = int(std::floor(std::log10(d))) - kErrDecadeLo + 1;
  return std::clamp(b, 1, kErrBins - 1);
}

}  // namespace

Inspection inspect(const TraceModel& model, const InspectTarget& t) {
  Inspection in;
  in.target = t;
  const trace::TraceRow* row = model.row(t.step, t.mode, t.layer, t.stage);
  if (!row) {
    in.error =
        fmt::format("no stage '{}' at layer {} step {} ({})", t.stage, t.layer, t.step, mode_name(t.mode));
    return in;
  }
  in.row = int(row - model.rows().data());
  in.shape = row->result.shape;
  if (!model.reader().has_tensors(*row)) {
    in.error = "this stage's tensors were not captured (trace written with --capture failing or stats)";
    return in;
  }
  try {
    in.ref = model.reader().ref_tensor(*row).to_f64();
    in.cand = model.reader().cand_tensor(*row).to_f64();
    in.per_token = model.reader().per_token(*row);
  } catch (const std::exception& e) {
    in.error = e.what();
    in.ref.clear();
    in.cand.clear();
    return in;
  }
  in.cols = in.shape.empty() ? 1 : std::max<std::int64_t>(1, in.shape.back());
  in.rows = std::int64_t(in.ref.size()) / in.cols;
  const Metrics& m = row->result.m;
  in.ratio.resize(in.ref.size());
  std::int64_t first_mismatch = -1, first_nan = -1, max_i = 0;
  double max_d = -1;
  for (std::size_t i = 0; i < in.ref.size(); ++i) {
    const double a = in.ref[i], b = in.cand[i];
    const double d = std::fabs(b - a);
    const double tol = m.atol + m.rtol * std::fabs(a);
    const bool nan = std::isnan(a) != std::isnan(b);
    double r = tol > 0 ? d / tol : (d > 0 ? 1e3 : 0);
    if (nan || std::isnan(d)) r = std::numeric_limits<double>::quiet_NaN();
    in.ratio[i] = float(r);
    ++in.err_hist[std::size_t(err_bin(std::isnan(d) ? HUGE_VAL : d))];
    if (first_mismatch < 0 && (r > 1 || std::isnan(r)) && !(std::isnan(a) && std::isnan(b)))
      first_mismatch = std::int64_t(i);
    if (first_nan < 0 && (std::isnan(a) || std::isnan(b))) first_nan = std::int64_t(i);
    if (d > max_d) max_d = d, max_i = std::int64_t(i);
  }
  in.focus = first_mismatch >= 0 ? first_mismatch : first_nan >= 0 ? first_nan : max_i;
  return in;
}

std::optional<std::int64_t> parse_coordinate(const std::string& text, const Inspection& in) {
  std::string s = text;
  std::replace(s.begin(), s.end(), ',', ' ');
  std::istringstream is(s);
  std::vector<std::int64_t> c;
  for (std::int64_t v; is >> v;) c.push_back(v);
  if (!is.eof() || c.empty()) return std::nullopt;
  if (c.size() == 1) {  // a flat index
    if (c[0] < 0 || c[0] >= std::int64_t(in.ref.size())) return std::nullopt;
    return c[0];
  }
  Shape dims = c.size() == 2 ? Shape{in.rows, in.cols} : in.shape;
  if (c.size() != dims.size()) return std::nullopt;
  std::int64_t flat = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i] < 0 || c[i] >= dims[i]) return std::nullopt;
    flat = flat * dims[i] + c[i];
  }
  return flat;
}

std::string coordinate_str(std::int64_t flat, const Shape& shape) {
  if (flat < 0 || shape.empty()) return fmt::format("{}", flat);
  std::vector<std::int64_t> c(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    c[i] = flat % shape[i];
    flat /= shape[i];
  }
  return fmt::format("[{}]", fmt::join(c, ", "));
}

DiffImage diff_image(const Inspection& in, std::int64_t r0, std::int64_t c0, std::int64_t nr, std::int64_t nc,
                     int max_bins) {
  DiffImage img;
  if (!in.loaded()) return img;
  img.r0 = std::clamp<std::int64_t>(r0, 0, in.rows - 1);
  img.c0 = std::clamp<std::int64_t>(c0, 0, in.cols - 1);
  img.nr = std::clamp<std::int64_t>(nr, 1, in.rows - img.r0);
  img.nc = std::clamp<std::int64_t>(nc, 1, in.cols - img.c0);
  img.out_rows = int(std::min<std::int64_t>(img.nr, max_bins));
  img.out_cols = int(std::min<std::int64_t>(img.nc, max_bins));
  std::vector<float> worst(std::size_t(img.out_rows) * std::size_t(img.out_cols), 0.0f);
  for (std::int64_t r = 0; r < img.nr; ++r) {
    const std::size_t br = std::size_t(r * img.out_rows / img.nr);
    for (std::int64_t c = 0; c < img.nc; ++c) {
      const std::size_t bc = std::size_t(c * img.out_cols / img.nc);
      const float v = in.ratio[std::size_t((img.r0 + r) * in.cols + img.c0 + c)];
      float& w = worst[br * std::size_t(img.out_cols) + bc];
      // NaN wins a bin: a single NaN must stay visible when zoomed out.
      if (std::isnan(v) || std::isnan(w))
        w = std::numeric_limits<float>::quiet_NaN();
      else
        w = std::max(w, v);
    }
  }
  img.fill.resize(worst.size());
  for (std::size_t i = 0; i < worst.size(); ++i) img.fill[i] = error_colour(worst[i]).packed();
  return img;
}

}  // namespace ds::view
