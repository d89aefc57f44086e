#include "history_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "build_info.h"
#include "runner.h"
#include "user_file.h"

namespace ds {

namespace {

// The schema of version 1 (docs/nightly.md). Nights are ordered by id, their insertion order.
constexpr const char* kSchema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE nights (
  id INTEGER PRIMARY KEY,
  label TEXT NOT NULL UNIQUE,
  added_at TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  sources TEXT NOT NULL
);
CREATE TABLE cases (
  id INTEGER PRIMARY KEY,
  night_id INTEGER NOT NULL REFERENCES nights(id),
  model TEXT NOT NULL,
  candidate TEXT NOT NULL,
  seed TEXT NOT NULL,
  probe TEXT NOT NULL,
  outcome TEXT NOT NULL,
  exit_code INTEGER,
  verdict TEXT NOT NULL,
  source TEXT NOT NULL,
  UNIQUE (night_id, model, candidate, seed, probe)
);
CREATE TABLE stages (
  case_id INTEGER NOT NULL REFERENCES cases(id),
  stage TEXT NOT NULL,
  layer INTEGER NOT NULL,
  mode TEXT NOT NULL,
  status TEXT NOT NULL,
  ratio REAL,
  worst_step INTEGER NOT NULL,
  PRIMARY KEY (case_id, stage, layer, mode)
);
CREATE INDEX cases_by_key ON cases (model, candidate, seed, probe);
)sql";

const std::set<std::string, std::less<>> kTables = {"meta", "nights", "cases", "stages"};

bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }
bool is_readonly(int rc) { return (rc & 0xff) == SQLITE_READONLY; }

std::string now_utc() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace

struct HistoryDb::Handle {
  sqlite3* db = nullptr;
  bool empty = false;  // a new or empty database: the schema is written with the first night
  ~Handle() { sqlite3_close_v2(db); }
};

namespace {

// Every SQLite failure in words that name the file and say what to do, thrown as bad input (exit 2).
[[noreturn]] void fail(const std::string& path, sqlite3* db, int rc, std::string_view doing,
                       double busy_timeout_s) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (is_busy(rc))
    throw InputError(fmt::format(
        "{}: the history database is locked by another process (still locked after --busy-timeout {:g} s, "
        "while {}): {}; nothing was changed",
        path, busy_timeout_s, doing, detail));
  if (is_readonly(rc))
    throw InputError(fmt::format("{}: the history database is read-only ({} failed: {}); nothing was changed",
                                 path, doing, detail));
  if ((rc & 0xff) == SQLITE_NOTADB)
    throw InputError(
        fmt::format("{}: not a SQLite database ({}), so not a driftscope history", path, detail));
  throw InputError(fmt::format("{}: {} failed: {}", path, doing, detail));
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, double busy_s, std::string_view sql)
      : db_(db), path_(path), busy_s_(busy_s) {
    const int rc = sqlite3_prepare_v2(db, sql.data(), int(sql.size()), &st_, nullptr);
    if (rc != SQLITE_OK) fail(path_, db_, rc, "reading the history", busy_s_);
  }
  ~Statement() { sqlite3_finalize(st_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(st_, i, v.data(), int(v.size()), SQLITE_TRANSIENT));
  }
  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Statement& bind(int i, std::optional<double> v) {
    return check(v ? sqlite3_bind_double(st_, i, *v) : sqlite3_bind_null(st_, i));
  }
  Statement& bind(int i, std::optional<int> v) {
    return check(v ? sqlite3_bind_int64(st_, i, *v) : sqlite3_bind_null(st_, i));
  }
  // One step: true while it yields a row.
  bool step(std::string_view doing) {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(path_, db_, rc, doing, busy_s_);
  }
  // Runs it to the end, then makes it ready to be bound and run again.
  void run(std::string_view doing) {
    while (step(doing)) {
    }
    reset();
  }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(st_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), std::size_t(sqlite3_column_bytes(st_, col)))
             : std::string();
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(st_, col); }
  bool null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  double real(int col) const { return sqlite3_column_double(st_, col); }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) fail(path_, db_, rc, "storing the night", busy_s_);
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  const std::string& path_;
  double busy_s_;
};

void exec(sqlite3* db, const std::string& path, double busy_s, const char* sql, std::string_view doing) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(path, db, rc, doing, busy_s);
}

// Rolls back unless committed: a night is stored whole or not at all.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path, double busy_s) : db_(db), path_(path), busy_s_(busy_s) {
    // IMMEDIATE takes the write lock now, so a locked file is found before anything is written.
    exec(db_, path_, busy_s_, "BEGIN IMMEDIATE", "taking the write lock");
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, path_, busy_s_, "COMMIT", "committing the night");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  double busy_s_;
  bool done_ = false;
};

std::uint64_t parse_seed(const std::string& path, const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    throw InputError(fmt::format("{}: a stored seed '{}' is not a seed: a corrupt history", path, text));
  return v;
}

}  // namespace

HistoryDb::HistoryDb(const std::string& path, Access access, double busy_timeout_s)
    : path_(path), busy_timeout_s_(busy_timeout_s), db_(std::make_unique<Handle>()) {
  refuse_special_file<InputError>(path);
  std::error_code ec;
  if (access == Access::read && !std::filesystem::exists(path, ec))
    throw InputError(fmt::format("{}: no such history database (history add creates one)", path));
  const int flags =
      access == Access::write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (const int rc = sqlite3_open_v2(path.c_str(), &db_->db, flags, nullptr); rc != SQLITE_OK)
    fail(path, db_->db, rc, "opening the history", busy_timeout_s);
  sqlite3_extended_result_codes(db_->db, 1);
  sqlite3_busy_timeout(db_->db, int(busy_timeout_s * 1000));
  // SQLite opens a file it may not write read-only without a word; adding to it would fail at the
  // first write, after the traces were read.
  if (access == Access::write && sqlite3_db_readonly(db_->db, "main") == 1)
    throw InputError(fmt::format(
        "{}: the history database is read-only (no write permission): history add cannot store the night; "
        "history show can still read it",
        path));
  std::set<std::string, std::less<>> tables;
  {
    Statement list(db_->db, path_, busy_timeout_s_, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (list.step("reading the history's tables")) tables.insert(list.text(0));
  }
  if (tables.empty()) {
    db_->empty = true;
    return;
  }
  if (!tables.contains("meta"))
    throw InputError(
        fmt::format("{}: a SQLite database, but not a driftscope history (it has no meta table)", path));
  Statement meta(db_->db, path_, busy_timeout_s_, "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!meta.step("reading the schema version"))
    throw InputError(
        fmt::format("{}: a SQLite database, but not a driftscope history (no schema_version in meta)", path));
  const std::string v = meta.text(0);
  int version = 0;
  const auto [end, err] = std::from_chars(v.data(), v.data() + v.size(), version);
  if (v.empty() || err != std::errc{} || end != v.data() + v.size() || version < 1)
    throw InputError(
        fmt::format("{}: meta.schema_version '{}' is not a schema version: a corrupt history", path, v));
  if (version > kHistorySchemaVersion)
    throw InputError(fmt::format(
        "{}: history schema version {} is newer than this driftscope ({}) reads, version {}: use a newer "
        "driftscope; nothing was changed",
        path, version, tool_version(), kHistorySchemaVersion));
  for (const auto& t : kTables)
    if (!tables.contains(t))
      throw InputError(
          fmt::format("{}: schema version {} but no {} table: a corrupt history", path, version, t));
}

HistoryDb::~HistoryDb() = default;

bool HistoryDb::add_night(const std::string& label, const std::vector<std::string>& sources,
                          const std::vector<CaseRecord>& cases, bool replace) {
  sqlite3* db = db_->db;
  const double busy = busy_timeout_s_;
  Transaction tx(db, path_, busy);
  if (db_->empty) {
    // Another add may have created the tables between the open and this lock.
    Statement meta(db, path_, busy,
                   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    db_->empty = meta.step("reading the history's tables") && meta.integer(0) == 0;
  }
  if (db_->empty) {
    exec(db, path_, busy, kSchema, "creating the history's tables");
    Statement meta(db, path_, busy, "INSERT INTO meta (key, value) VALUES (?, ?)");
    meta.bind(1, std::string("schema_version"))
        .bind(2, std::to_string(kHistorySchemaVersion))
        .run("writing meta");
    meta.bind(1, std::string("created_by"))
        .bind(2, fmt::format("driftscope {}", tool_version()))
        .run("writing meta");
  }
  std::string joined;
  for (const auto& s : sources) joined += (joined.empty() ? "" : "\n") + s;
  std::int64_t night = -1;
  {
    Statement find(db, path_, busy, "SELECT id FROM nights WHERE label = ?");
    find.bind(1, label);
    if (find.step("looking up the label")) night = find.integer(0);
  }
  const bool replaced = night >= 0;
  if (replaced && !replace)
    throw InputError(fmt::format(
        "{}: the label {} is already stored; give another label, or --replace to replace that night's cases "
        "(it keeps its place among the nights); nothing was changed",
        path_, label));
  if (replaced) {
    Statement(db, path_, busy,
              "DELETE FROM stages WHERE case_id IN (SELECT id FROM cases WHERE night_id = ?)")
        .bind(1, night)
        .run("replacing the night");
    Statement(db, path_, busy, "DELETE FROM cases WHERE night_id = ?")
        .bind(1, night)
        .run("replacing the night");
    Statement(db, path_, busy, "UPDATE nights SET added_at = ?, tool_version = ?, sources = ? WHERE id = ?")
        .bind(1, now_utc())
        .bind(2, tool_version())
        .bind(3, joined)
        .bind(4, night)
        .run("replacing the night");
  } else {
    Statement(db, path_, busy,
              "INSERT INTO nights (label, added_at, tool_version, sources) VALUES (?, ?, ?, ?)")
        .bind(1, label)
        .bind(2, now_utc())
        .bind(3, tool_version())
        .bind(4, joined)
        .run("storing the night");
    night = sqlite3_last_insert_rowid(db);
  }
  Statement add_case(
      db, path_, busy,
      "INSERT INTO cases (night_id, model, candidate, seed, probe, outcome, exit_code, verdict, "
      "source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement add_stage(
      db, path_, busy,
      "INSERT INTO stages (case_id, stage, layer, mode, status, ratio, worst_step) VALUES (?, ?, "
      "?, ?, ?, ?, ?)");
  for (const CaseRecord& c : cases) {
    add_case.bind(1, night)
        .bind(2, c.model)
        .bind(3, c.candidate)
        .bind(4, std::to_string(c.seed))
        .bind(5, c.probe)
        .bind(6, c.outcome)
        .bind(7, c.exit_code)
        .bind(8, c.verdict)
        .bind(9, c.source)
        .run("storing a case");
    const std::int64_t case_id = sqlite3_last_insert_rowid(db);
    for (const StageRecord& s : c.stages)
      add_stage.bind(1, case_id)
          .bind(2, s.stage)
          .bind(3, std::int64_t(s.layer))
          .bind(4, s.mode)
          .bind(5, s.status)
          .bind(6, s.ratio)
          .bind(7, std::int64_t(s.worst_step))
          .run("storing a stage");
  }
  tx.commit();
  db_->empty = false;
  return replaced;
}

std::vector<NightInfo> HistoryDb::nights() const {
  std::vector<NightInfo> out;
  if (db_->empty) return out;
  Statement q(db_->db, path_, busy_timeout_s_, "SELECT label, added_at FROM nights ORDER BY id");
  while (q.step("reading the nights")) out.push_back({q.text(0), q.text(1)});
  return out;
}

std::vector<StoredCase> HistoryDb::cases(const HistoryFilter& filter) const {
  std::vector<StoredCase> out;
  if (db_->empty) return out;
  // One read transaction, so that a night added meanwhile is wholly in or wholly out.
  exec(db_->db, path_, busy_timeout_s_, "BEGIN", "reading the history");
  struct End {
    sqlite3* db;
    ~End() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
  } end{db_->db};
  std::map<std::int64_t, std::size_t> night_index;
  {
    Statement q(db_->db, path_, busy_timeout_s_, "SELECT id FROM nights ORDER BY id");
    while (q.step("reading the nights")) night_index.emplace(q.integer(0), night_index.size());
  }
  Statement q(
      db_->db, path_, busy_timeout_s_,
      "SELECT id, night_id, model, candidate, seed, probe, outcome, exit_code, verdict, source FROM cases "
      "WHERE (?1 = '' OR model = ?1) AND (?2 = '' OR candidate = ?2) ORDER BY night_id, id");
  q.bind(1, filter.model).bind(2, filter.candidate);
  Statement stages(
      db_->db, path_, busy_timeout_s_,
      "SELECT stage, layer, mode, status, ratio, worst_step FROM stages WHERE case_id = ?1 AND (?2 = '' "
      "OR stage = ?2) ORDER BY rowid");
  while (q.step("reading the cases")) {
    StoredCase sc;
    const auto n = night_index.find(q.integer(1));
    if (n == night_index.end())
      throw InputError(fmt::format("{}: a case of night id {}, which is not stored: a corrupt history", path_,
                                   q.integer(1)));
    sc.night = n->second;
    CaseRecord& c = sc.record;
    c.model = q.text(2);
    c.candidate = q.text(3);
    c.seed = parse_seed(path_, q.text(4));
    c.probe = q.text(5);
    c.outcome = q.text(6);
    if (!q.null(7)) c.exit_code = int(q.integer(7));
    c.verdict = q.text(8);
    c.source = q.text(9);
    stages.bind(1, q.integer(0)).bind(2, filter.stage);
    while (stages.step("reading the stages")) {
      StageRecord s{stages.text(0), int(stages.integer(1)), stages.text(2),
                    stages.text(3), std::nullopt,           int(stages.integer(5))};
      if (!stages.null(4)) s.ratio = stages.real(4);
      c.stages.push_back(std::move(s));
    }
    stages.reset();
    out.push_back(std::move(sc));
  }
  return out;
}

}  // namespace ds
