#include "trace_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>

#include "h5_util.h"
#include "json_text.h"
#include "trace_commit.h"
#include "stage_catalog.h"

namespace ds::trace {

namespace {

// The rows of a compound dataset, its rank and length checked first (dataset_length), at most
// `written` of them (trace_commit.h: rows past it were never really written). Absent: an error
// when `required`, else no rows.
template <class Row>
std::vector<Row> read_rows(hid_t root, const char* name, hid_t type, const std::string& path, bool required,
                           std::optional<std::int64_t> written) {
  const hid_t d = H5Dopen2(root, relative(name), H5P_DEFAULT);
  if (d < 0) {
    H5Tclose(type);
    if (required) throw TraceError(fmt::format("{}: dataset {} is missing", path, name));
    return {};
  }
  std::vector<Row> rows;
  herr_t rc = 0;
  try {
    const std::int64_t extent = dataset_length(d, path, name, kMaxRows);
    rows.resize(std::size_t(written ? std::min(extent, *written) : extent));
    if (!rows.empty()) {
      // Only the written rows are read: the index of chunks past them may be what a failed write left.
      const hsize_t start[1] = {0}, count[1] = {rows.size()};
      const hid_t fspace = H5Dget_space(d), mspace = H5Screate_simple(1, count, nullptr);
      rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
      if (rc >= 0) rc = H5Dread(d, type, mspace, fspace, H5P_DEFAULT, rows.data());
      H5Sclose(mspace);
      H5Sclose(fspace);
    }
  } catch (...) {
    H5Tclose(type);
    H5Dclose(d);
    throw;
  }
  H5Tclose(type);
  H5Dclose(d);
  if (rc < 0) throw TraceError(fmt::format("{}: cannot read {} (corrupt?)", path, name));
  return rows;
}

// The elements of a stored shape, or -1 when a dimension is negative or the product exceeds
// what a trace can hold (overflow-safe).
std::int64_t checked_numel(const std::int64_t* dims, int rank) {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0) return -1;
    if (dims[i] && n > kMaxTensorElements / dims[i]) return -1;
    n *= dims[i];
  }
  return n;
}

// A /summary row with a value no writer produces is a corrupt file: refused here, naming the
// row and field, before any report indexes a table or sizes a buffer with it.
void check_row(const SummaryRow& r, std::size_t i, const std::string& path) {
  auto bad = [&](std::string_view field, auto value) {
    return TraceError(fmt::format("{}: {} row {}: {} = {} is out of range: corrupt trace", path, kSummary, i,
                                  field, value));
  };
  // An old or hand-edited trace may name no stage, or one the catalogue no longer has: every
  // report would print it as the first failing stage ("is  of layer 0"), so it is refused here.
  const std::string_view stage(r.stage, strnlen(r.stage, sizeof r.stage));
  if (stage.empty())
    throw TraceError(
        fmt::format("{}: {} row {} (step {}, layer {}): the stage name is empty: corrupt or too old a trace",
                    path, kSummary, i, r.step, r.layer));
  if (!is_catalog_stage(stage))
    throw TraceError(
        fmt::format("{}: {} row {} (step {}, layer {}): stage '{}' is not a stage of the catalogue "
                    "(docs/trace-format.md): "
                    "written by another version, or edited",
                    path, kSummary, i, r.step, r.layer, utf8_escaped(std::string(stage))));
  if (r.mode > std::uint8_t(Mode::chained)) throw bad("mode", int(r.mode));
  // Any status the vocabulary names (result.h grows new ones): an unnamed code is corrupt.
  if (!parse_status(status_name(Status(r.status)))) throw bad("status", int(r.status));
  if (r.cand_dtype > std::uint8_t(DType::i32)) throw bad("cand_dtype", int(r.cand_dtype));
  if (r.rank < 0 || r.rank > kMaxRank) throw bad("rank", r.rank);
  if (checked_numel(r.shape, r.rank) < 0)
    throw bad("shape", fmt::format("{}", fmt::join(r.shape, r.shape + r.rank, "x")));
  for (auto [field, v] : {std::pair{"ref_offset", r.ref_offset}, std::pair{"cand_offset", r.cand_offset},
                          std::pair{"tokens_offset", r.tokens_offset}})
    if (v < -1) throw bad(field, v);
  if (r.n_tokens < 0) throw bad("n_tokens", r.n_tokens);
}

// The run JSON's fields that reports read, by type: a trace is input like any other file.
void check_run_json(const nlohmann::json& run, const std::string& path) {
  if (!run.is_object()) throw TraceError(fmt::format("{}: attribute 'run' is not a JSON object", path));
  for (const char* part : {"model", "candidate"}) {
    if (!run.contains(part)) continue;
    const auto& v = run[part];
    if (!v.is_object())
      throw TraceError(
          fmt::format("{}: attribute 'run': {} must be an object (it is {})", path, part, v.type_name()));
    if (v.contains("name") && !v["name"].is_string())
      throw TraceError(fmt::format("{}: attribute 'run': {}.name must be a string (it is {})", path, part,
                                   v["name"].type_name()));
  }
  for (const char* field : {"model_spec", "policy"})
    if (run.contains(field) && !run[field].is_string())
      throw TraceError(fmt::format("{}: attribute 'run': {} must be a string (it is {})", path, field,
                                   run[field].type_name()));
  for (const char* field : {"seed", "prompt_tokens", "decode_steps", "layers"})
    if (run.contains(field) && !run[field].is_number_integer())
      throw TraceError(fmt::format("{}: attribute 'run': {} must be an integer (it is {})", path, field,
                                   run[field].type_name()));
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : TraceReader(path, "/") {}

TraceReader::TraceReader(const std::string& path, const std::string& group) : path_(path), group_(group) {
  const ReadGuard guard(path);
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
      throw TraceError(
          fmt::format("{}: attribute 'run' is not valid JSON: {}", path, utf8_escaped(e.what())));
    }
    check_run_json(run_, path);
    written_ = read_written(root_, path);
    const std::vector<SummaryRow> raw =
        read_rows<SummaryRow>(root_, kSummary, summary_type(), path, true, written(0));
    rows_.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
      check_row(raw[i], i, path);
      const SummaryRow& r = raw[i];
      rows_.push_back({from_row(r), r.ref_offset, r.cand_offset, r.tokens_offset, r.n_tokens});
    }
    result_ = read_stored_result(root_, path);
    case_ = describe_case(run_, result_, path);
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

std::optional<std::int64_t> TraceReader::written(std::size_t k) const {
  if (!written_) return std::nullopt;
  return (*written_)[k];
}

std::optional<std::string> TraceReader::incomplete() const {
  if (case_.finished) return std::nullopt;
  if (case_.status == kStatusWriteFailed) {
    const std::string why =
        case_.reason.empty() ? case_.verdict : case_.reason.substr(0, case_.reason.find('\n'));
    if (rows_.empty())
      return fmt::format("the trace write failed ({}) before any stage row was written", why);
    const StageResult& last = rows_.back().result;
    return fmt::format(
        "the trace write failed ({}); {} stage row(s) were written before it, the last {} of {} at step {} "
        "({})",
        why, rows_.size(), last.key.stage,
        last.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", last.key.layer),
        last.key.step, mode_name(last.mode));
  }
  if (rows_.empty()) return std::string("the run did not finish (no result stored) and flushed no stage row");
  const StageResult& last = rows_.back().result;
  return fmt::format(
      "the run did not finish (no result stored); {} stage row(s) were flushed, the last {} of {} at step {} "
      "({})",
      rows_.size(), last.key.stage,
      last.key.layer == kModelLayer ? std::string("the model") : fmt::format("layer {}", last.key.layer),
      last.key.step, mode_name(last.mode));
}

std::string TraceReader::attr(const std::string& name) const {
  const ReadGuard guard(path_);
  return read_string_attr(root_, name.c_str());
}

std::vector<double> TraceReader::read_pool(const char* name, std::int64_t offset, std::int64_t n) const {
  if (n == 0) return {};
  const ReadGuard guard(path_, false);  // bulk data: no metadata deadline
  const hid_t d = H5Dopen2(root_, relative(name), H5P_DEFAULT);
  if (d < 0) throw TraceError(fmt::format("{}: dataset {} is missing", path_, name));
  // The row's offset and count come from the file too: the slice must lie inside the pool.
  std::int64_t extent = 0;
  try {
    extent = dataset_length(d, path_, name, std::numeric_limits<std::int64_t>::max());
  } catch (...) {
    H5Dclose(d);
    throw;
  }
  if (offset < 0 || n < 0 || n > kMaxTensorElements || offset > extent - n) {
    H5Dclose(d);
    throw TraceError(fmt::format("{}: {} elements at {} lie outside {} ({} elements): corrupt trace", path_,
                                 n, offset, name, extent));
  }
  std::vector<double> out(static_cast<std::size_t>(n));
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

std::optional<std::vector<StepLaunch>> TraceReader::launches() const {
  const ReadGuard guard(path_);
  if (H5Lexists(root_, relative(kLaunches), H5P_DEFAULT) <= 0) return std::nullopt;
  std::vector<StepLaunch> out;
  for (const LaunchRow& r :
       read_rows<LaunchRow>(root_, kLaunches, launch_row_type(), path_, false, written(2)))
    out.push_back(from_launch_row(r));
  return out;
}

std::optional<CapturedStep> TraceReader::captured_step(int step, int layer, Mode mode,
                                                       const std::string& stage) const {
  const ReadGuard guard(path_);
  if (H5Lexists(root_, "inputs", H5P_DEFAULT) <= 0) return std::nullopt;
  const std::vector<InputRow> rows =
      read_rows<InputRow>(root_, kInputIndex, input_row_type(), path_, false, written(1));
  std::optional<CapturedStep> out;
  for (const auto& r : rows) {
    if (r.step != step || r.layer != layer || r.mode != std::uint8_t(mode)) continue;
    const std::vector<std::string> outs = split_stages({r.outputs, strnlen(r.outputs, sizeof r.outputs)});
    if (std::find(outs.begin(), outs.end(), stage) == outs.end()) continue;
    const std::string ks(r.kernel_step, strnlen(r.kernel_step, sizeof r.kernel_step));
    if (out && out->kernel_step != ks) continue;
    if (!out) out = CapturedStep{ks, outs, r.pos0, r.n_tokens, {}};
    if (r.rank < 0 || r.rank > kMaxRank || checked_numel(r.shape, r.rank) < 0 ||
        r.dtype > std::uint8_t(DType::i32))
      throw TraceError(
          fmt::format("{}: {}: the row of input {} of {} has a bad rank, shape or dtype: corrupt trace",
                      path_, kInputIndex, std::string(r.name, strnlen(r.name, sizeof r.name)), ks));
    Shape shape(r.shape, r.shape + r.rank);
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
