// What part of a trace was really written. HDF5 grows a dataset's extent and writes the chunks
// behind it in separate steps, and when a write fails (disk full) it still flushes the rest: a
// dataset can then hold rows whose data never reached the disk, which read back as zeros. So the
// writer counts a row as written only once a flush of its data and of the row has succeeded
// (/written), and a reader reads no row past that count. A failed write is recorded in
// /write_error, space reserved when the trace was created, since the disk has no room for more.
#pragma once

#include <hdf5.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ds::trace {

inline constexpr const char* kWritten = "/written";
inline constexpr const char* kWriteError = "/write_error";
inline constexpr std::size_t kWriteErrorBytes = 4096;

// Rows made durable, in the order of /written: /summary, /inputs/index, /launches.
using WrittenRows = std::array<std::int64_t, 3>;

// Creates /written (zeros) and /write_error (all NUL), their space allocated and filled now, while
// the file is still small, so that rewriting them later needs no new space. False on failure.
bool create_commit_datasets(hid_t file);
// Stores the counts in /written and flushes it: call only after the rows and their data flushed.
bool commit_rows(hid_t file, const WrittenRows& rows);
// Stores `result` (JSON, cut to fit kWriteErrorBytes) in /write_error and flushes it.
bool store_write_error(hid_t file, const nlohmann::json& result);

// The counts of /written under `loc`; nullopt for a trace written before it existed (every row
// counts). Throws TraceError naming `path` when the dataset is not what the writer makes.
std::optional<WrittenRows> read_written(hid_t loc, const std::string& path);
// The run's result: /result when it holds JSON, else the write-failure record of /write_error,
// else nullopt (the run did not finish).
std::optional<nlohmann::json> read_stored_result(hid_t loc, const std::string& path);

}  // namespace ds::trace
