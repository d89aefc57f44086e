// The nightly history: a SQLite file of nights, each night's cases and their stages' error-to-floor
// ratios (docs/nightly.md has the schema). One night is added in one transaction, so a failed add
// leaves the file as it was.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "history_records.h"

namespace ds {

// The schema this build writes, and the newest it reads; a file of a newer one is refused.
inline constexpr int kHistorySchemaVersion = 1;

struct NightInfo {
  std::string label;
  std::string added_at;  // UTC, ISO 8601
};

// What `history show` asks for: exact matches, "" for any.
struct HistoryFilter {
  std::string model, candidate, stage;
};

// One case on one night, with its stages (only the stage of the filter, when it names one).
struct StoredCase {
  std::size_t night = 0;  // index into HistoryDb::nights()
  CaseRecord record;
};

class HistoryDb {
 public:
  enum class Access { read, write };
  // Opens `path`: for writing, created (with the schema) when it does not exist; for reading it
  // must exist. Waits up to `busy_timeout_s` for another process's lock. Throws InputError naming
  // the file: not a SQLite database, a SQLite database that is no history, a schema newer than
  // this build's, read-only (for writing), locked past the timeout.
  HistoryDb(const std::string& path, Access access, double busy_timeout_s);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  // Stores `cases` as the night `label`, in one transaction. A label already stored is refused
  // (InputError naming it) unless `replace`, which swaps that night's cases and keeps its place in
  // the order. `sources` are the trace files, recorded with the night.
  // Returns whether a night was replaced.
  bool add_night(const std::string& label, const std::vector<std::string>& sources,
                 const std::vector<CaseRecord>& cases, bool replace);

  // Every night, in the order they were first added.
  std::vector<NightInfo> nights() const;
  // Every stored case matching `filter`, night by night.
  std::vector<StoredCase> cases(const HistoryFilter& filter) const;

  const std::string& path() const { return path_; }

 private:
  struct Handle;
  std::string path_;
  double busy_timeout_s_;
  std::unique_ptr<Handle> db_;
};

}  // namespace ds
