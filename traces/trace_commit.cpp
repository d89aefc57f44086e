#include "trace_commit.h"

#include <fmt/format.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "h5_util.h"
#include "json_text.h"
#include "trace_stub.h"
#include "trace_writer.h"

namespace ds::trace {

namespace {

// A fixed-size contiguous dataset with its space allocated and zero-filled at creation: a later
// rewrite lands on bytes the file already holds.
bool create_fixed(hid_t file, const char* name, hid_t type, hsize_t n) {
  const hsize_t dims[1] = {n};
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const unsigned char zeros[8] = {};
  const bool set =
      H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 && H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
      H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC) >= 0 && H5Pset_fill_value(dcpl, type, zeros) >= 0;
  const hid_t d = set ? H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
  H5Pclose(dcpl);
  H5Sclose(space);
  if (d < 0) return false;
  return H5Dclose(d) >= 0;
}

bool write_fixed(hid_t file, const char* name, hid_t type, const void* data) {
  const hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
  if (d < 0) return false;
  const bool ok = H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0 && H5Dflush(d) >= 0;
  return H5Dclose(d) >= 0 && ok;
}

// The record's text, its reason (then its verdict) shortened until it fits with a closing NUL.
std::string fitted(nlohmann::json result) {
  std::string text = json_text(result);
  for (const char* field : {"reason", "verdict"}) {
    if (text.size() < kWriteErrorBytes) break;
    if (!result.contains(field) || !result[field].is_string()) continue;
    const std::string s = result[field].get<std::string>();
    const std::size_t excess = text.size() - kWriteErrorBytes + 8;
    result[field] = s.substr(0, s.size() > excess ? s.size() - excess : 0) + "...";
    text = json_text(result);
  }
  if (text.size() >= kWriteErrorBytes) text = json_text({{"status", kStatusWriteFailed}});
  return text;
}

}  // namespace

bool create_commit_datasets(hid_t file) {
  return create_fixed(file, kWritten, H5T_NATIVE_INT64, std::tuple_size_v<WrittenRows>) &&
         create_fixed(file, kWriteError, H5T_NATIVE_UINT8, kWriteErrorBytes);
}

bool commit_rows(hid_t file, const WrittenRows& rows) {
  return write_fixed(file, kWritten, H5T_NATIVE_INT64, rows.data());
}

bool store_write_error(hid_t file, const nlohmann::json& result) {
  std::vector<char> bytes(kWriteErrorBytes, '\0');
  const std::string text = fitted(result);
  std::memcpy(bytes.data(), text.data(), text.size());
  return write_fixed(file, kWriteError, H5T_NATIVE_UINT8, bytes.data());
}

std::optional<WrittenRows> read_written(hid_t loc, const std::string& path) {
  if (H5Lexists(loc, relative(kWritten), H5P_DEFAULT) <= 0) return std::nullopt;
  const hid_t d = H5Dopen2(loc, relative(kWritten), H5P_DEFAULT);
  if (d < 0) throw TraceError(fmt::format("{}: cannot open {} (corrupt?)", path, kWritten));
  WrittenRows rows{};
  herr_t rc = -1;
  try {
    if (dataset_length(d, path, kWritten, std::int64_t(rows.size())) == std::int64_t(rows.size()))
      rc = H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
  } catch (...) {
    H5Dclose(d);
    throw;
  }
  H5Dclose(d);
  if (rc < 0)
    throw TraceError(fmt::format("{}: {} does not hold the {} row counts it should: corrupt trace", path,
                                 kWritten, rows.size()));
  for (std::int64_t n : rows)
    if (n < 0)
      throw TraceError(
          fmt::format("{}: {} holds a negative row count ({}): corrupt trace", path, kWritten, n));
  return rows;
}

std::optional<nlohmann::json> read_stored_result(hid_t loc, const std::string& path) {
  if (auto result = read_json_dataset(loc, relative(kResult), path)) return result;
  if (H5Lexists(loc, relative(kWriteError), H5P_DEFAULT) <= 0) return std::nullopt;
  const hid_t d = H5Dopen2(loc, relative(kWriteError), H5P_DEFAULT);
  if (d < 0) return std::nullopt;
  std::vector<char> bytes;
  try {
    bytes.resize(std::size_t(dataset_length(d, path, kWriteError, std::int64_t(kWriteErrorBytes))));
  } catch (...) {
    H5Dclose(d);
    throw;
  }
  const bool read =
      bytes.empty() || H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0;
  H5Dclose(d);
  if (!read) return std::nullopt;
  const std::size_t n = strnlen(bytes.data(), bytes.size());
  if (n == 0) return std::nullopt;  // no write failed (or the run is still going, or was killed)
  try {
    nlohmann::json record = nlohmann::json::parse(std::string_view(bytes.data(), n));
    // Only a write-failure record counts: /write_error cannot make a run look finished.
    if (record.is_object() && record.value("status", nlohmann::json()) == kStatusWriteFailed) return record;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace ds::trace
