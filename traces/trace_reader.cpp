#include "trace_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "h5_util.h"
#include "stage_catalog.h"

namespace ds::trace {

TraceReader::TraceReader(const std::string& path) : TraceReader(path, "/") {}

TraceReader::TraceReader(const std::string& path, const std::string& group) : path_(path), group_(group) {
  file_ = open_trace_file(path);
  try {
    if (group == "/" && is_merged(file_)) {
      hsize_t n = 0;
      if (const hid_t g = H5Gopen2(file_, kCases, H5P_DEFAULT); g >= 0) {
        H5G_info_t info{};
        if (H5Gget_info(g, &info) >= 0) n = info.nlinks;
        H5Gclose(g);
      }
      throw TraceError(fmt::format(
          "{}: a merged file of {} case(s), not a single run: open one case (driftscope-view --case K); "
          "report and diff read every case",
          path, n));
    }
    root_ = H5Gopen2(file_, group.c_str(), H5P_DEFAULT);
    if (root_ < 0) throw TraceError(fmt::format("{}: no case {} in this file", path, group));
    if (read_string_attr(root_, "schema") != kSchema)
      throw TraceError(fmt::format("{}: {} is not a Driftscope trace (no schema attribute)", path, group));
    version_ = read_int_attr(root_, "version");
    if (version_ > kVersion)
      throw TraceError(fmt::format("{}: trace schema version {} is newer than this driftscope reads ({})",
                                   path, version_, kVersion));
    try {
      run_ = nlohmann::json::parse(read_string_attr(root_, "run"));
    } catch (const std::exception& e) {
      throw TraceError(fmt::format("{}: attribute 'run' is not valid JSON: {}", path, e.what()));
    }
    const hid_t d = H5Dopen2(root_, relative(kSummary), H5P_DEFAULT);
    if (d < 0) throw TraceError(fmt::format("{}: dataset {} is missing", path, kSummary));
    const std::int64_t n = dataset_size(d);
    std::vector<SummaryRow> raw(static_cast<std::size_t>(n));
    const hid_t t = summary_type();
    const herr_t rc = n ? H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) : 0;
    H5Tclose(t);
    H5Dclose(d);
    if (rc < 0) throw TraceError(fmt::format("{}: cannot read {} (corrupt?)", path, kSummary));
    rows_.reserve(raw.size());
    for (const auto& r : raw)
      rows_.push_back({from_row(r), r.ref_offset, r.cand_offset, r.tokens_offset, r.n_tokens});
    result_ = read_json_dataset(root_, relative(kResult));
    case_ = describe_case(run_, result_);
    case_.group = group;
    case_.source = read_string_attr(root_, kMergedFrom);
  } catch (...) {
    close();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void TraceReader::close() {
  if (root_ >= 0) H5Gclose(root_);
  if (file_ >= 0) H5Fclose(file_);
  root_ = file_ = -1;
}

TraceReader::~TraceReader() { close(); }

std::optional<std::string> TraceReader::incomplete() const {
  if (case_.finished) return std::nullopt;
  if (rows_.empty()) return std::string("the run did not finish (no result stored) and flushed no stage row");
  const StageResult& last = rows_.back().result;
  return fmt::format(
      "the run did not finish (no result stored); {} stage row(s) were flushed, the last {} of {} at step {} "
      "({})",
      rows_.size(), last.key.stage,
      last.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", last.key.layer),
      last.key.step, mode_name(last.mode));
}

std::string TraceReader::attr(const std::string& name) const { return read_string_attr(root_, name.c_str()); }

std::vector<double> TraceReader::read_pool(const char* name, std::int64_t offset, std::int64_t n) const {
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n == 0) return out;
  const hid_t d = H5Dopen2(root_, relative(name), H5P_DEFAULT);
  if (d < 0) throw TraceError(fmt::format("{}: dataset {} is missing", path_, name));
  const hid_t fspace = H5Dget_space(d);
  const hsize_t start[1] = {hsize_t(offset)}, count[1] = {hsize_t(n)};
  herr_t rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
  const hid_t mspace = H5Screate_simple(1, count, nullptr);
  if (rc >= 0) rc = H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, out.data());
  H5Sclose(mspace);
  H5Sclose(fspace);
  H5Dclose(d);
  if (rc < 0)
    throw TraceError(fmt::format("{}: cannot read {} elements at {} of {}", path_, n, offset, name));
  elements_read_ += n;
  return out;
}

std::optional<CapturedStep> TraceReader::captured_step(int step, int layer, Mode mode,
                                                       const std::string& stage) const {
  if (H5Lexists(root_, "inputs", H5P_DEFAULT) <= 0) return std::nullopt;
  const hid_t d = H5Dopen2(root_, relative(kInputIndex), H5P_DEFAULT);
  if (d < 0) return std::nullopt;
  std::vector<InputRow> rows(static_cast<std::size_t>(dataset_size(d)));
  const hid_t t = input_row_type();
  const herr_t rc = rows.empty() ? 0 : H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
  H5Tclose(t);
  H5Dclose(d);
  if (rc < 0) throw TraceError(fmt::format("{}: cannot read {}", path_, kInputIndex));
  std::optional<CapturedStep> out;
  for (const auto& r : rows) {
    if (r.step != step || r.layer != layer || r.mode != std::uint8_t(mode)) continue;
    std::vector<std::string> outs;
    const std::string joined(r.outputs, strnlen(r.outputs, sizeof r.outputs));
    for (std::size_t a = 0; a <= joined.size();) {
      const std::size_t b = std::min(joined.find(',', a), joined.size());
      outs.push_back(joined.substr(a, b - a));
      a = b + 1;
    }
    if (std::find(outs.begin(), outs.end(), stage) == outs.end()) continue;
    const std::string ks(r.kernel_step, strnlen(r.kernel_step, sizeof r.kernel_step));
    if (out && out->kernel_step != ks) continue;
    if (!out) out = CapturedStep{ks, outs, r.pos0, r.n_tokens, {}};
    Shape shape(r.shape, r.shape + std::clamp(r.rank, 0, kMaxRank));
    out->inputs[std::string(r.name, strnlen(r.name, sizeof r.name))] =
        Tensor::from_f64(shape, read_pool(kInputPool, r.offset, numel(shape)), DType(r.dtype));
  }
  return out;
}

Tensor TraceReader::ref_tensor(const TraceRow& row) const {
  if (row.ref_offset < 0)
    throw TraceError(fmt::format("{}: stage {} has no stored tensors", path_, row.result.key.stage));
  return Tensor::from_f64(row.result.shape, read_pool(kRefPool, row.ref_offset, numel(row.result.shape)));
}

Tensor TraceReader::cand_tensor(const TraceRow& row) const {
  if (row.cand_offset < 0)
    throw TraceError(fmt::format("{}: stage {} has no stored tensors", path_, row.result.key.stage));
  return Tensor::from_f64(row.result.shape, read_pool(kCandPool, row.cand_offset, numel(row.result.shape)));
}

std::vector<double> TraceReader::per_token(const TraceRow& row) const {
  if (row.tokens_offset < 0) return {};
  return read_pool(kTokenPool, row.tokens_offset, row.n_tokens);
}

}  // namespace ds::trace
