#include "trace_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "h5_util.h"
#include "json_text.h"
#include "trace_commit.h"
#include "trace_schema.h"
#include "trace_stub.h"
#include "trace_writer.h"
#include "user_file.h"

namespace ds::trace {

std::string case_key(const std::string& model, const std::string& candidate, std::uint64_t seed,
                     const std::string& probe) {
  return fmt::format("{} x {} x seed {}{}", model, candidate, seed, probe.empty() ? "" : " x probe " + probe);
}

namespace {

// The fields of a stored result that reports act on, by type: the exit code becomes `report`'s own,
// so a value no run writes (a string, 255, 7) is a corrupt trace, never an exit status outside the
// CLI's 0-4. A result without one records no verdict of its own (its rows are re-judged).
constexpr std::int64_t kMaxExitCode = 4;  // the CLI's exit codes: 0 parity .. 4 crashed (docs/cli.md)
void check_result_json(const nlohmann::json& result, const std::string& path) {
  const char* name =
      result.value("status", nlohmann::json()) == kStatusWriteFailed ? "/write_error" : "/result";
  if (result.contains("exit_code")) {
    const nlohmann::json& code = result["exit_code"];
    if (!code.is_number_integer() || code.get<std::int64_t>() < 0 || code.get<std::int64_t>() > kMaxExitCode)
      throw TraceError(
          fmt::format("{}: {}: exit_code must be an integer from 0 to {} (it is {} {}): corrupt trace", path,
                      name, kMaxExitCode, code.type_name(), json_text(code)));
  }
  for (const char* field : {"status", "verdict", "reason"})
    if (result.contains(field) && !result[field].is_string())
      throw TraceError(fmt::format("{}: {}: {} must be a string (it is {}): corrupt trace", path, name, field,
                                   result[field].type_name()));
  // A run that stopped before any stage exits by why it stopped: 3 refused, 2 bad input or a failed
  // trace write. Any other pairing (a refusal stored with exit 0) would make `report` pass it.
  if (const std::string status = result.value("status", std::string());
      !status.empty() && status != kStatusRan) {
    const std::int64_t want = status == kStatusRefused                                    ? 3
                              : status == kStatusBadInput || status == kStatusWriteFailed ? 2
                              : status == kStatusSkipped                                  ? 0
                                                                                          : -1;
    if (want < 0)
      throw TraceError(fmt::format("{}: {}: status '{}' is none of {}, {}, {}, {}, {}: corrupt trace", path,
                                   name, status, kStatusRan, kStatusRefused, kStatusBadInput, kStatusSkipped,
                                   kStatusWriteFailed));
    if (!result.contains("exit_code") || result["exit_code"].get<std::int64_t>() != want)
      throw TraceError(fmt::format("{}: {}: a run of status '{}' exits {} (it stored {}): corrupt trace",
                                   path, name, status, want,
                                   result.contains("exit_code") ? json_text(result["exit_code"]) : "none"));
  }
}

}  // namespace

TraceCase describe_case(const nlohmann::json& run, const std::optional<nlohmann::json>& result,
                        const std::string& path) {
  TraceCase c;
  auto str = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  // The spec as given on the command line (what a matrix is written in); the config's own
  // name only for traces written before model_spec was recorded.
  c.model = str(run, "model_spec");
  if (c.model.empty() && run.contains("model")) c.model = str(run["model"], "name");
  if (run.contains("candidate")) c.candidate = str(run["candidate"], "name");
  if (run.contains("seed") && run["seed"].is_number_unsigned()) c.seed = run["seed"].get<std::uint64_t>();
  c.probe = str(run, "probe");
  if (run.contains("case") && run["case"].is_object()) {
    const auto& k = run["case"];
    if (k.contains("index") && k["index"].is_number_integer()) c.index = k["index"].get<int>();
    if (k.contains("of") && k["of"].is_number_integer()) c.of = k["of"].get<int>();
    c.shard = str(k, "shard");
    c.command_line = str(k, "command_line");
  }
  if (result && result->is_object()) {
    check_result_json(*result, path);
    // A failed trace write is recorded like a stopped run, but its run did not finish: its written
    // rows are judged, INCOMPLETE.
    c.finished = str(*result, "status") != kStatusWriteFailed;
    if (result->contains("exit_code") && (*result)["exit_code"].is_number_integer())
      c.exit_code = (*result)["exit_code"].get<int>();
    c.verdict = str(*result, "verdict");
    c.status = str(*result, "status");
    if (c.status.empty()) c.status = kStatusRan;  // written before stopped runs left a trace
    c.reason = str(*result, "reason");
  }
  return c;
}

hid_t open_trace_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw TraceError(fmt::format("{}: no such trace file", path));
  refuse_special_file<TraceError>(path);
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw TraceError(fmt::format("{}: not an HDF5 file (truncated, or not a Driftscope trace)", path));
  // A plain read-only open first: it reads each piece of metadata once, so a corrupt checksum is
  // an error at once. Only a file still marked as being written in SWMR mode (its writer was
  // killed, or is running) needs a SWMR read, and there HDF5 retries a bad checksum with doubling
  // sleeps, 100 times by default, which on a corrupt file never ends in practice: a few attempts
  // (well under a millisecond of sleeps) are enough for a writer's torn metadata.
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_metadata_read_attempts(fapl, kSwmrReadAttempts);
    file = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    H5Pclose(fapl);
  }
  if (file < 0) throw TraceError(fmt::format("{}: HDF5 cannot open the file (truncated or corrupt?)", path));
  if (read_string_attr(file, "schema") != kSchema) {
    H5Fclose(file);
    throw TraceError(
        fmt::format("{}: an HDF5 file but not a Driftscope trace (no schema attribute '{}')", path, kSchema));
  }
  if (const int v = read_int_attr(file, "version"); v > kVersion) {
    H5Fclose(file);
    throw TraceError(fmt::format("{}: trace schema version {} is newer than this driftscope reads ({})", path,
                                 v, kVersion));
  }
  return file;
}

bool is_merged(hid_t file) { return read_int_attr(file, kMerged) > 0; }

namespace {

TraceCase read_case(hid_t file, const std::string& group, const std::string& path) {
  const ReadGuard guard(path);  // one metadata deadline per case, however many a file holds
  const hid_t g = H5Gopen2(file, group.c_str(), H5P_DEFAULT);
  if (g < 0) throw TraceError(fmt::format("{}: cannot open group {}", path, group));
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(read_string_attr(g, "run"));
  } catch (const std::exception& e) {
    H5Gclose(g);
    // nlohmann quotes the bytes it stopped at, which need not be UTF-8.
    throw TraceError(
        fmt::format("{}: attribute 'run' of {} is not valid JSON: {}", path, group, utf8_escaped(e.what())));
  }
  TraceCase c = describe_case(run, read_stored_result(g, path), path);
  c.group = group;
  c.source = read_string_attr(g, kMergedFrom);
  H5Gclose(g);
  return c;
}

}  // namespace

std::vector<TraceCase> list_cases(const std::string& path) {
  const ReadGuard guard(path);
  const hid_t file = open_trace_file(path);
  std::vector<TraceCase> out;
  try {
    if (!is_merged(file)) {
      out.push_back(read_case(file, "/", path));
    } else {
      const hid_t g = H5Gopen2(file, kCases, H5P_DEFAULT);
      if (g < 0) throw TraceError(fmt::format("{}: a merged file without {}", path, kCases));
      std::vector<std::string> names = child_names(g);
      H5Gclose(g);
      // Group names are the merged order k; HDF5 lists them as strings ("10" before "2").
      std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
      });
      for (const auto& n : names) out.push_back(read_case(file, fmt::format("{}/{}", kCases, n), path));
    }
  } catch (...) {
    H5Fclose(file);
    throw;
  }
  H5Fclose(file);
  return out;
}

}  // namespace ds::trace
