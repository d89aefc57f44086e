// Opens a trace lazily: the summary table at open, tensors only when asked for.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace_cases.h"
#include "trace_schema.h"
#include "trace_writer.h"

namespace ds::trace {

struct TraceRow {
  StageResult result;
  std::int64_t ref_offset = -1, cand_offset = -1, tokens_offset = -1;
  std::int32_t n_tokens = 0;
};

// The stored inputs of the candidate step that produced one stage.
struct CapturedStep {
  std::string kernel_step;
  std::vector<std::string> outputs;
  int pos0 = 0, n_tokens = 0;
  std::map<std::string, Tensor, std::less<>> inputs;  // in the dtype the candidate was given
};

class TraceReader {
 public:
  // Throws TraceError with a message naming the file and what is wrong with it: not HDF5,
  // not a Driftscope trace, a newer schema, truncated or unreadable, or a merged file (which
  // holds many runs: open one of its cases).
  explicit TraceReader(const std::string& path);
  // One case of a file: `group` is TraceCase::group from list_cases() ("/" for a single trace).
  TraceReader(const std::string& path, const std::string& group);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& path() const { return path_; }
  const std::string& group() const { return group_; }
  const TraceCase& trace_case() const { return case_; }
  int version() const { return version_; }
  std::string attr(const std::string& name) const;  // "" when absent
  const nlohmann::json& run() const { return run_; }
  const std::vector<TraceRow>& rows() const { return rows_; }
  // The run's result JSON; nullopt when the run did not finish (killed or crashed harness).
  const std::optional<nlohmann::json>& result() const { return result_; }
  // A case whose run stored no result (killed, hung, or the harness itself crashed) or whose trace
  // write failed is INCOMPLETE, whatever its flushed stages say (docs/trace-format.md#incomplete-runs):
  // one sentence naming how many stage rows were flushed and the last of them (and the failed
  // write). nullopt for a run that finished.
  std::optional<std::string> incomplete() const;

  bool has_tensors(const TraceRow& row) const { return row.ref_offset >= 0 && row.cand_offset >= 0; }
  Tensor ref_tensor(const TraceRow& row) const;   // f64, the row's shape
  Tensor cand_tensor(const TraceRow& row) const;  // f64 holding the candidate's stored values
  std::vector<double> per_token(const TraceRow& row) const;
  // The inputs of the step that produced `stage` at (step, layer, mode); nullopt when the trace
  // did not capture them (only failing stages' steps are captured).
  std::optional<CapturedStep> captured_step(int step, int layer, Mode mode, const std::string& stage) const;
  // The candidate's kernel launch records (/launches) in launch order; nullopt for a trace written
  // before launch records existed. Read on each call.
  std::optional<std::vector<StepLaunch>> launches() const;
  // How many tensor elements have been read so far (the viewer's lazy-loading check).
  std::int64_t elements_read() const { return elements_read_; }

 private:
  std::vector<double> read_pool(const char* name, std::int64_t offset, std::int64_t n) const;
  // How many rows of /summary (0), /inputs/index (1), /launches (2) were really written; nullopt
  // for a trace older than that count (trace_commit.h).
  std::optional<std::int64_t> written(std::size_t k) const;

  void close();

  std::string path_, group_;
  hid_t file_ = -1, root_ = -1;  // root_: the case's group (the file's root for a single trace)
  TraceCase case_;
  int version_ = 0;
  nlohmann::json run_;
  std::vector<TraceRow> rows_;
  std::optional<std::array<std::int64_t, 3>> written_;
  std::optional<nlohmann::json> result_;
  mutable std::int64_t elements_read_ = 0;
};

}  // namespace ds::trace
