#include "trace_writer.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>

#include "h5_util.h"
#include "trace_commit.h"
#include "json_text.h"
#include "stage_catalog.h"

namespace ds::trace {

namespace {

void check(herr_t rc, std::string_view what, const std::string& path) {
  if (rc < 0) throw TraceError(fmt::format("{}: HDF5 failed to {}", path, what));
}

hid_t make_pool(hid_t file, const char* name, hid_t type, hsize_t chunk, bool compress) {
  const hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunks[1] = {chunk};
  const hid_t space = H5Screate_simple(1, dims, maxdims);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, chunks);
  if (compress) {
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 1);
  }
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t d = H5Dcreate2(file, name, type, space, lcpl, dcpl, H5P_DEFAULT);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
  return d;
}

// Appends `n` elements of `type` at the end of 1-D dataset `d` whose current size is `size`.
// Every HDF5 status is checked: on a failure (disk full, I/O error) the extent goes back to
// `size`, so no zero-filled rows appear that a reader would judge, and TraceError says what failed.
void append_1d(hid_t d, hid_t type, std::int64_t& size, const void* data, std::size_t n,
               const std::string& path, std::string_view what) {
  if (n == 0) return;
  const hsize_t old_size[1] = {hsize_t(size)}, new_size[1] = {hsize_t(size) + n};
  if (H5Dset_extent(d, new_size) < 0)
    throw TraceError(
        fmt::format("{}: cannot grow {} by {} elements (disk full or I/O error?)", path, what, n));
  const hid_t fspace = H5Dget_space(d);
  const hsize_t start[1] = {hsize_t(size)}, count[1] = {n};
  const hid_t mspace = H5Screate_simple(1, count, nullptr);
  const bool ok = fspace >= 0 && mspace >= 0 &&
                  H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
                  H5Dwrite(d, type, mspace, fspace, H5P_DEFAULT, data) >= 0;
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  if (!ok) {
    H5Dset_extent(d, old_size);  // best effort: the write already failed
    throw TraceError(
        fmt::format("{}: cannot write {} elements to {} (disk full or I/O error?)", path, n, what));
  }
  size += std::int64_t(n);
}

// One writer per trace: an open-file-description record lock (F_OFD_SETLK) on the trace itself,
// taken before HDF5 truncates it. HDF5's own flock() is independent of it on Linux and given up
// once SWMR writing starts, so it cannot tell two runs apart; and a classic fcntl() lock would be
// dropped when HDF5 closes the descriptor it opens the file with first. The file is opened
// without O_TRUNC, so a refused run leaves the other run's trace as it is. The lock dies with the
// writer (closing lock_fd_) or its process, so a killed run blocks no one.
//
// OFD locks do not report their owner's pid, so the holder also locks one byte at kPidBase + its
// pid, which the refused run reads back to name it.
constexpr off_t kPidBase = off_t(1) << 62;

bool ofd_lock(int fd, int cmd, struct flock& l, off_t start, off_t len) {
  l = {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = start;
  l.l_len = len;
  return ::fcntl(fd, cmd, &l) == 0;
}

int lock_for_writing(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw TraceError(fmt::format("{}: cannot open the trace for writing: {}", path, std::strerror(errno)));
  struct flock l {};
  if (ofd_lock(fd, F_OFD_SETLK, l, 0, kPidBase)) {
    ofd_lock(fd, F_OFD_SETLK, l, kPidBase + ::getpid(), 1);
    return fd;
  }
  const bool known = ofd_lock(fd, F_OFD_GETLK, l, kPidBase, off_t(1) << 32) && l.l_type != F_UNLCK;
  ::close(fd);
  throw TraceError(
      fmt::format("{}: another driftscope run ({}) is writing this trace; give each run its own --trace path",
                  path, known ? fmt::format("process {}", l.l_start - kPidBase) : std::string("a process")));
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, const nlohmann::json& root_attrs, const nlohmann::json& run,
                         WriterOptions options)
    : path_(path), opt_(std::move(options)) {
  // A file whose write or close failed (disk full) stays open in HDF5's tables, and the library's
  // clean-up at exit then crashes closing it again: the writer closes what it opened itself.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (!opt_.stage_filter.empty()) {
    try {
      stage_filter_.emplace(compile_stage_pattern(opt_.stage_filter));
    } catch (const std::invalid_argument& e) {
      throw TraceError(fmt::format("stage filter: {}", e.what()));
    }
  }
  lock_fd_ = lock_for_writing(path);
  try {
    create_file(root_attrs, run);
  } catch (const TraceError&) {
    // The file was truncated and holds nothing a reader could open: gone rather than left half-made
    // (the handles HDF5 could not close stay open, as after any failed write).
    ::unlink(path_.c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
    file_ = -1;
    throw;
  }
}

void TraceWriter::create_file(const nlohmann::json& root_attrs, const nlohmann::json& run) {
  const std::string& path = path_;
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  // SWMR needs the latest format; it is what keeps the file consistent at every instant.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (file_ < 0) throw TraceError(fmt::format("{}: cannot create the trace file", path));
  write_string_attr(file_, "schema", kSchema);
  write_int_attr(file_, "version", kVersion);
  for (const auto& [k, v] : root_attrs.items())
    write_string_attr(file_, k, v.is_string() ? utf8_escaped(v.get<std::string>()) : json_text(v));
  write_string_attr(file_, "run", json_text(run));
  write_string_attr(file_, "capture", std::string(capture_name(opt_.capture)));
  write_string_attr(file_, "capture_stages", opt_.stage_filter);
  write_string_attr(file_, "capture_layers", fmt::format("{}:{}", opt_.layer_min, opt_.layer_max));
  row_type_ = summary_type();
  summary_ = make_pool(file_, kSummary, row_type_, 256, false);
  ref_ = make_pool(file_, kRefPool, H5T_NATIVE_DOUBLE, 16384, true);
  cand_ = make_pool(file_, kCandPool, H5T_NATIVE_DOUBLE, 16384, true);
  tokens_ = make_pool(file_, kTokenPool, H5T_NATIVE_DOUBLE, 1024, false);
  result_ = make_pool(file_, kResult, H5T_NATIVE_UINT8, 4096, false);
  input_type_ = input_row_type();
  inputs_ = make_pool(file_, kInputPool, H5T_NATIVE_DOUBLE, 16384, true);
  input_index_ = make_pool(file_, kInputIndex, input_type_, 64, false);
  launch_type_ = launch_row_type();
  launches_ = make_pool(file_, kLaunches, launch_type_, 256, false);
  if (inputs_ < 0 || input_index_ < 0 || launches_ < 0)
    throw TraceError(fmt::format("{}: cannot create the input datasets", path));
  if (summary_ < 0 || ref_ < 0 || cand_ < 0 || tokens_ < 0 || result_ < 0 || !create_commit_datasets(file_))
    throw TraceError(fmt::format("{}: cannot create the trace datasets", path));
  check(H5Fstart_swmr_write(file_), "start SWMR writing", path_);
}

TraceWriter::~TraceWriter() {
  if (failed_) {
    abandon();
    return;
  }
  try {
    flush();
  } catch (...) {
  }
  for (hid_t d : {summary_, ref_, cand_, tokens_, result_, inputs_, input_index_, launches_})
    if (d >= 0) H5Dclose(d);
  if (row_type_ >= 0) H5Tclose(row_type_);
  if (launch_type_ >= 0) H5Tclose(launch_type_);
  if (input_type_ >= 0) H5Tclose(input_type_);
  if (file_ >= 0) H5Fclose(file_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool TraceWriter::captures(const StageResult& r) const {
  if (opt_.capture == Capture::stats) return false;
  if (opt_.capture == Capture::failing && !is_failure(r)) return false;
  const bool model_level = r.key.layer == kModelLayer;
  if (!model_level && (r.key.layer < opt_.layer_min || r.key.layer > opt_.layer_max)) return false;
  if (stage_filter_ && !std::regex_match(r.key.stage, *stage_filter_)) return false;
  return true;
}

std::int64_t TraceWriter::append_pool(hid_t dset, std::int64_t& size, const std::vector<double>& values,
                                      std::string_view name) {
  const std::int64_t at = size;
  append_1d(dset, H5T_NATIVE_DOUBLE, size, values.data(), values.size(), path_, name);
  return at;
}

void TraceWriter::append(const StageResult& r, const Tensor* ref, const Tensor* cand) {
  const FailureMark mark(*this);
  SummaryRow row = to_row(r);
  if (captures(r)) {
    if (ref) row.ref_offset = append_pool(ref_, ref_size_, ref->to_f64(), kRefPool);
    if (cand) row.cand_offset = append_pool(cand_, cand_size_, cand->to_f64(), kCandPool);
  }
  if (!r.per_token_rel.empty()) {
    row.tokens_offset = append_pool(tokens_, tokens_size_, r.per_token_rel, kTokenPool);
    row.n_tokens = std::int32_t(r.per_token_rel.size());
  }
  pending_.push_back(row);
}

void TraceWriter::append_inputs(int step, int layer, Mode mode, int pos0, int n_tokens,
                                const std::string& kernel_step, const std::vector<std::string>& outputs,
                                const std::map<std::string, Tensor, std::less<>>& inputs) {
  const FailureMark mark(*this);
  const std::string outs = join_stages(outputs);
  for (const auto& [name, t] : inputs) {
    if (t.empty()) continue;  // e.g. prev: before the first step; replay hands it over empty
    InputRow row{};
    row.step = step;
    row.layer = layer;
    row.pos0 = pos0;
    row.n_tokens = n_tokens;
    row.mode = std::uint8_t(mode);
    row.dtype = std::uint8_t(t.dtype());
    std::snprintf(row.kernel_step, sizeof row.kernel_step, "%s", kernel_step.c_str());
    std::snprintf(row.outputs, sizeof row.outputs, "%s", outs.c_str());
    std::snprintf(row.name, sizeof row.name, "%s", name.c_str());
    row.rank = std::int32_t(std::min<std::size_t>(t.shape().size(), kMaxRank));
    for (int i = 0; i < row.rank; ++i) row.shape[i] = t.shape()[std::size_t(i)];
    row.offset = append_pool(inputs_, inputs_size_, t.to_f64(), kInputPool);
    append_1d(input_index_, input_type_, input_rows_, &row, 1, path_, kInputIndex);
  }
}

void TraceWriter::append_launch(const StepLaunch& launch) {
  pending_launches_.push_back(to_launch_row(launch));
}

void TraceWriter::flush() {
  if (file_ < 0 || failed_) return;
  const FailureMark mark(*this);
  // The rows leave pending_ before the write: a failed write is not retried by the destructor's flush.
  std::vector<SummaryRow> rows = std::move(pending_);
  pending_.clear();
  std::vector<LaunchRow> launches = std::move(pending_launches_);
  pending_launches_.clear();
  append_1d(launches_, launch_type_, launch_rows_, launches.data(), launches.size(), path_, kLaunches);
  append_1d(summary_, row_type_, rows_, rows.data(), rows.size(), path_, kSummary);
  for (hid_t d : {ref_, cand_, tokens_, inputs_, input_index_, launches_, summary_})
    check(H5Dflush(d), "flush a dataset", path_);
  check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "flush the file", path_);
  // Only now are these rows and everything they point at on disk: a reader reads no row past it.
  if (!commit_rows(file_, {rows_, input_rows_, launch_rows_}))
    throw TraceError(fmt::format("{}: HDF5 failed to write {} (disk full or I/O error?)", path_, kWritten));
}

void TraceWriter::finish(const nlohmann::json& result) {
  flush();
  if (failed_ || file_ < 0) throw TraceError(fmt::format("{}: an earlier write to the trace failed", path_));
  const FailureMark mark(*this);
  const std::string s = json_text(result);
  std::int64_t size = 0;
  append_1d(result_, H5T_NATIVE_UINT8, size, s.data(), s.size(), path_, kResult);
  check(H5Dflush(result_), "flush the result", path_);
  // Everything on disk before the close, which would otherwise be where a full disk shows, and
  // a failed close leaves a file HDF5 no longer opens (see abandon()).
  check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "flush the file", path_);
  for (hid_t* d : {&summary_, &ref_, &cand_, &tokens_, &result_, &inputs_, &input_index_, &launches_}) {
    H5Dclose(*d);
    *d = -1;
  }
  H5Tclose(row_type_);
  row_type_ = -1;
  H5Tclose(launch_type_);
  launch_type_ = -1;
  H5Tclose(input_type_);
  input_type_ = -1;
  const herr_t closed = H5Fclose(file_);
  file_ = -1;
  ::close(lock_fd_);
  lock_fd_ = -1;
  check(closed, "close the file", path_);
}

bool TraceWriter::record_failure(const nlohmann::json& result) {
  if (file_ < 0) return false;
  const bool stored = store_write_error(file_, result);
  abandon();
  return stored;
}

void TraceWriter::abandon() {
  // The HDF5 handles stay open on purpose: closing the file would retry every write that failed and
  // then mark it closed with an end of allocation past its real end, which HDF5 refuses to open
  // ("truncated file"). Left marked as being written, it opens as a killed run's trace does.
  file_ = -1;
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

}  // namespace ds::trace
