// Streams a run into an HDF5 trace. The file is written in SWMR mode and flushed after every
// layer, so a process killed mid-run (even by SIGKILL) leaves a file that opens and holds
// every flushed layer.
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "result.h"
#include "trace_schema.h"

namespace ds::trace {

struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct WriterOptions {
  Capture capture = Capture::all;
  std::string stage_filter;  // regex on "stage"; empty keeps all
  int layer_min = -1, layer_max = 1 << 30;
};

class TraceWriter {
 public:
  // `root_attrs` become string attributes of "/" (tool version, command line, ...);
  // `run` (model, candidate, policy, ...) is stored as the JSON attribute "run". One writer per
  // path: while a writer (of this or another process) holds `path`, another throws TraceError
  // naming the path and that process, and leaves the file as it is.
  TraceWriter(const std::string& path, const nlohmann::json& root_attrs, const nlohmann::json& run,
              WriterOptions options = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Buffers one stage row and, depending on the capture mode, its tensors.
  void append(const StageResult& r, const Tensor* ref, const Tensor* cand);
  // Stores the inputs a candidate step was given (for `driftscope replay`).
  void append_inputs(int step, int layer, Mode mode, int pos0, int n_tokens, const std::string& kernel_step,
                     const std::vector<std::string>& outputs,
                     const std::map<std::string, Tensor, std::less<>>& inputs);
  // Buffers one kernel launch record (a /launches row), written with the next flush.
  void append_launch(const StepLaunch& launch);
  // Writes the buffered rows and tensors and makes them durable.
  void flush();
  // Flushes, stores the run's result JSON and closes the file.
  void finish(const nlohmann::json& result);
  // After a write failed (any of the calls above threw TraceError): stores `result` (a stopped run
  // of status kStatusWriteFailed) in the space reserved for it and lets go of the file without
  // writing anything else. False when even that could not be stored. The rows a reader sees are
  // those whose flush succeeded (trace_commit.h).
  bool record_failure(const nlohmann::json& result);
  bool failed() const { return failed_; }
  const std::string& path() const { return path_; }

 private:
  std::int64_t append_pool(hid_t dset, std::int64_t& size, const std::vector<double>& values,
                           std::string_view name);
  bool captures(const StageResult& r) const;
  void create_file(const nlohmann::json& root_attrs, const nlohmann::json& run);
  void abandon();
  // Marks the writer failed when the scope it guards is left by an exception.
  struct FailureMark {
    explicit FailureMark(TraceWriter& w) : w_(w), pending_(std::uncaught_exceptions()) {}
    ~FailureMark() {
      if (std::uncaught_exceptions() > pending_) w_.failed_ = true;
    }
    FailureMark(const FailureMark&) = delete;
    FailureMark& operator=(const FailureMark&) = delete;
    TraceWriter& w_;
    int pending_;
  };

  std::string path_;
  WriterOptions opt_;
  std::optional<std::regex> stage_filter_;  // compiled once: captures() runs for every row
  int lock_fd_ = -1;                        // holds the one-writer lock on path_ (see the constructor)
  bool failed_ = false;                     // a write failed: nothing more is written
  hid_t file_ = -1, inputs_ = -1, input_index_ = -1, input_type_ = -1, summary_ = -1, ref_ = -1, cand_ = -1,
        tokens_ = -1, result_ = -1, row_type_ = -1, launches_ = -1, launch_type_ = -1;
  std::int64_t inputs_size_ = 0, input_rows_ = 0, rows_ = 0, ref_size_ = 0, cand_size_ = 0, tokens_size_ = 0;
  std::int64_t launch_rows_ = 0;
  std::vector<SummaryRow> pending_;
  std::vector<LaunchRow> pending_launches_;
};

}  // namespace ds::trace
