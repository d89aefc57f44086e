#include "trace_merge.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "h5_util.h"
#include "json_text.h"
#include "trace_schema.h"
#include "trace_writer.h"

namespace ds::trace {

hid_t case_index_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(CaseIndexRow));
  auto str = [&](const char* name, std::size_t offset, std::size_t size) {
    const hid_t s = H5Tcopy(H5T_C_S1);
    H5Tset_size(s, size);
    H5Tset_strpad(s, H5T_STR_NULLTERM);
    H5Tinsert(t, name, offset, s);
    H5Tclose(s);
  };
  str("group", HOFFSET(CaseIndexRow, group), sizeof(CaseIndexRow::group));
  str("model", HOFFSET(CaseIndexRow, model), sizeof(CaseIndexRow::model));
  str("candidate", HOFFSET(CaseIndexRow, candidate), sizeof(CaseIndexRow::candidate));
  H5Tinsert(t, "seed", HOFFSET(CaseIndexRow, seed), H5T_NATIVE_UINT64);
  H5Tinsert(t, "case_index", HOFFSET(CaseIndexRow, case_index), H5T_NATIVE_INT32);
  H5Tinsert(t, "case_of", HOFFSET(CaseIndexRow, case_of), H5T_NATIVE_INT32);
  str("shard", HOFFSET(CaseIndexRow, shard), sizeof(CaseIndexRow::shard));
  str("source", HOFFSET(CaseIndexRow, source), sizeof(CaseIndexRow::source));
  H5Tinsert(t, "finished", HOFFSET(CaseIndexRow, finished), H5T_NATIVE_UINT8);
  H5Tinsert(t, "exit_code", HOFFSET(CaseIndexRow, exit_code), H5T_NATIVE_INT32);
  str("verdict", HOFFSET(CaseIndexRow, verdict), sizeof(CaseIndexRow::verdict));
  str("status", HOFFSET(CaseIndexRow, status), sizeof(CaseIndexRow::status));
  return t;
}

namespace {

namespace fs = std::filesystem;

// Room for a copied case's metadata (object headers, chunk indexes) beyond its datasets' bytes.
constexpr std::uint64_t kCaseSlackBytes = 64 << 10;

struct Input {
  std::string file;  // the file given to merge
  TraceCase c;       // c.source: where it first came from (the file itself unless it was merged)
};

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

template <std::size_t N>
void put(char (&dst)[N], const std::string& s) {
  std::snprintf(dst, N, "%s", s.c_str());
}

CaseIndexRow index_row(const std::string& group, const TraceCase& c) {
  CaseIndexRow r{};
  put(r.group, group);
  put(r.model, c.model);
  put(r.candidate, c.candidate);
  r.seed = c.seed;
  r.case_index = c.index;
  r.case_of = c.of;
  put(r.shard, c.shard);
  put(r.source, c.source);
  r.finished = c.finished ? 1 : 0;
  r.exit_code = c.exit_code;
  put(r.verdict, c.verdict);
  put(r.status, c.status);
  return r;
}

// Copies case `c` of `file` to `dst_name` in `dst`: the whole tree, attributes included.
void copy_case(const Input& in, hid_t dst, const std::string& dst_name) {
  const ReadGuard guard(in.file, false);  // copies every tensor: no metadata deadline
  const hid_t src = open_trace_file(in.file);
  const hid_t sg = H5Gopen2(src, in.c.group.c_str(), H5P_DEFAULT);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t dg = sg < 0 ? -1 : H5Gcreate2(dst, dst_name.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  // The children one by one and the attributes by hand, not H5Ocopy of the group itself: HDF5
  // 1.10 crashes copying a group's dense attribute storage (a trace root has a dozen attributes).
  bool ok = dg >= 0 && copy_attributes(sg, dg);
  if (ok)
    for (const auto& name : child_names(sg))
      ok = ok && H5Ocopy(sg, name.c_str(), dg, name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0;
  // A case already merged once keeps naming the shard file it first came from.
  if (ok && H5Aexists(dg, kMergedFrom) <= 0) write_string_attr(dg, kMergedFrom, in.c.source);
  if (dg >= 0) H5Gclose(dg);
  if (sg >= 0) H5Gclose(sg);
  H5Fclose(src);
  if (!ok)
    throw TraceError(fmt::format("{}: HDF5 failed to copy {} into the merged file", in.file, in.c.group));
}

// The bytes the datasets under `group` store (groups walked by name: no versioned visit API).
std::uint64_t storage_under(hid_t group) {
  std::uint64_t bytes = 0;
  for (const auto& name : child_names(group)) {
    if (const hid_t d = H5Dopen2(group, name.c_str(), H5P_DEFAULT); d >= 0) {
      bytes += H5Dget_storage_size(d);
      H5Dclose(d);
    } else if (const hid_t g = H5Gopen2(group, name.c_str(), H5P_DEFAULT); g >= 0) {
      bytes += storage_under(g);
      H5Gclose(g);
    }
  }
  return bytes;
}

// What copying case `c` of `file` adds to the merged file, metadata aside.
std::uint64_t case_storage(const Input& in) {
  const ReadGuard guard(in.file);
  const hid_t src = open_trace_file(in.file);
  const hid_t g = H5Gopen2(src, in.c.group.c_str(), H5P_DEFAULT);
  const std::uint64_t bytes = g < 0 ? 0 : storage_under(g);
  if (g >= 0) H5Gclose(g);
  H5Fclose(src);
  return bytes;
}

// HDF5 1.10 crashes in H5Ocopy's clean-up when a write to the destination fails, so a full disk
// must show before the copy: the merged file is grown with real zero bytes to hold what the next
// case adds (HDF5 then writes inside bytes the file already has) and cut back to HDF5's end of
// allocation when it is closed. Throws TraceError naming `out` when the disk cannot hold it.
void reserve(hid_t file, const std::string& tmp, const std::string& out, std::uint64_t bytes) {
  haddr_t eoa = 0;
  if (H5Fget_eoa(file, &eoa) < 0)
    throw TraceError(fmt::format("{}: HDF5 cannot say how large the merged file is", out));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    throw TraceError(fmt::format("{}: cannot write the merged file: {}", out, std::strerror(errno)));
  struct stat st {};
  const off_t target = off_t(eoa + bytes);
  int error = ::fstat(fd, &st) == 0 ? 0 : errno;
  static const std::vector<char> zeros(1 << 20, '\0');
  for (off_t at = st.st_size; error == 0 && at < target;) {
    const ssize_t n =
        ::pwrite(fd, zeros.data(), std::size_t(std::min<off_t>(target - at, off_t(zeros.size()))), at);
    if (n <= 0) error = n < 0 ? errno : ENOSPC;
    at += n > 0 ? n : 0;
  }
  ::close(fd);
  if (error)
    throw TraceError(fmt::format("{}: cannot write the merged file ({} more bytes): {}", out, bytes,
                                 std::strerror(error)));
}

// Cuts the closed merged file back to its end of allocation (reserve() may have left zeros past it).
void trim(const std::string& tmp, const std::string& out) {
  const hid_t f = H5Fopen(tmp.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  haddr_t eoa = 0;
  const bool known = f >= 0 && H5Fget_eoa(f, &eoa) >= 0;
  if (f >= 0) H5Fclose(f);
  if (!known || ::truncate(tmp.c_str(), off_t(eoa)) != 0)
    throw TraceError(fmt::format("{}: cannot finish the merged file (HDF5 cannot reopen it)", out));
}

void write_index(hid_t file, const std::vector<CaseIndexRow>& rows, const std::string& out) {
  const hsize_t dims[1] = {rows.size()};
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t t = case_index_type();
  const hid_t d = H5Dcreate2(file, kCaseIndex, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t rc = d < 0          ? -1
                    : rows.empty() ? 0
                                   : H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
  if (d >= 0) H5Dclose(d);
  H5Tclose(t);
  H5Sclose(space);
  if (rc < 0)
    throw TraceError(fmt::format("{}: HDF5 failed to write {} into the merged file", out, kCaseIndex));
}

}  // namespace

std::vector<TraceCase> merge_traces(const std::vector<std::string>& inputs, const std::string& out,
                                    const nlohmann::json& root_attrs) {
  // As in the trace writer: a file whose close failed (disk full) stays in HDF5's tables, and the
  // library's clean-up at exit would crash closing it again. Only heeded before HDF5's first call.
  H5dont_atexit();
  if (inputs.empty()) throw TraceError("merge: no input traces");
  for (const auto& f : inputs)
    if (same_file(f, out)) throw TraceError(fmt::format("{}: the output file is also an input", out));
  std::vector<Input> cases;
  std::map<std::string, std::string> seen;  // key -> the file holding it
  for (const auto& f : inputs)
    for (TraceCase c : list_cases(f)) {
      if (c.source.empty()) c.source = f;
      const auto [it, fresh] = seen.emplace(c.key(), f);
      if (!fresh)
        throw TraceError(fmt::format("{} and {} both hold case {}: a case may be merged only once",
                                     it->second, f, c.key()));
      cases.push_back({f, std::move(c)});
    }
  // Matrix order first (stable across nights), then by key for runs outside a matrix.
  std::stable_sort(cases.begin(), cases.end(), [](const Input& a, const Input& b) {
    auto rank = [](const TraceCase& c) { return std::tuple(c.index < 0, c.index, c.key()); };
    return rank(a.c) < rank(b.c);
  });

  // Written beside `out` and renamed at the end, so a failed merge leaves last night's file.
  const std::string tmp = out + ".partial";
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  // The copied datasets keep the SWMR writer's latest-format layouts, which need these bounds.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (file < 0) throw TraceError(fmt::format("{}: cannot create the merged file", out));
  std::vector<TraceCase> merged;
  try {
    write_string_attr(file, "schema", kSchema);
    write_int_attr(file, "version", kVersion);
    write_int_attr(file, kMerged, 1);
    for (const auto& [k, v] : root_attrs.items())
      write_string_attr(file, k, v.is_string() ? utf8_escaped(v.get<std::string>()) : json_text(v));
    std::vector<CaseIndexRow> rows;
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const std::string name = fmt::format("cases/{}", k);
      const std::uint64_t bytes = case_storage(cases[k]);
      reserve(file, tmp, out, bytes + bytes / 8 + kCaseSlackBytes);
      copy_case(cases[k], file, name);
      rows.push_back(index_row(name, cases[k].c));
      merged.push_back(cases[k].c);
      merged.back().group = "/" + name;
    }
    reserve(file, tmp, out, rows.size() * sizeof(CaseIndexRow) + kCaseSlackBytes);
    write_index(file, rows, out);
  } catch (...) {
    H5Fclose(file);
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  try {
    if (H5Fclose(file) < 0) throw TraceError(fmt::format("{}: HDF5 failed to close the merged file", out));
    trim(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw TraceError(fmt::format("{}: cannot write the merged file: {}", out, ec.message()));
  }
  return merged;
}

}  // namespace ds::trace
