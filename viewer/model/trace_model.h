// What the viewer knows about one open trace: run metadata, the layer x stage grids per step and
// mode with their cell colours computed once at open, and lookups from a cell to its summary row.
// Tensors stay in the file until the inspector asks (see inspector_model.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "colour_map.h"
#include "trace_reader.h"

namespace ds::view {

struct RunInfo {
  std::string model, candidate, modes, policy;
  // `run --baseline`: the stages were judged against this candidate, not the oracle ("" otherwise).
  std::string baseline;
  std::string probe;          // `run --probe`, or ""
  std::string verdict;        // "" when the run did not finish
  std::string first_failure;  // "residual_1 @ layer 0, step 0 (isolated)" or ""
  std::optional<int> drift_start_layer;
  bool finished = false;
  // What the header says about drift: "layer 3", "none: the chained error stays within the noise
  // floor", or why it is not known.
  std::string drift_text;
};

struct Cell {
  int row = -1;      // index into TraceModel::rows(); -1: this layer has no such stage
  double score = 0;  // error relative to the policy (see error_score)
  bool failing = false;
  bool nan = false;  // NaN or Inf disagreement between the two sides
  // A chained failure whose isolated twin passes (is_inherited_failure): the error was fed in by
  // an earlier stage. Drawn apart from a local failure, which is where a bug is.
  bool inherited = false;
  Status status = Status::pass;
  // Precomputed: drawing a cell is one rect. An inherited failure's is muted (inherited_fill).
  std::uint32_t fill = kEmptyColour.packed();
};

// One heatmap: stages are rows, layers are columns (model-level stages in the first column).
struct Grid {
  int step = 0;
  Mode mode = Mode::isolated;
  int seq = 0;  // the sequence of a batch run (`run --batch`); 0 otherwise
  int n_fail = 0, n_nan = 0, n_inherited = 0;
  std::vector<Cell> cells;  // stage-major: cells[stage * n_layers + layer_index]
};

// max |diff| relative to the tolerance the stage was judged with: atol + rtol * ref_rms.
// 1 is the edge of the tolerance; the heatmap is log-scaled over this.
double error_score(const Metrics& m);
// The colour of a cell. A failing cell keeps its score's colour on either side of 1 (the
// per-element check uses |ref| where the score uses the rms, so many failures score below 1) and
// is marked by its outline; a pass scoring over 1 stays on the cool side, so no unmarked cell
// looks hot.
Rgba cell_colour(double score, Status status, bool nan);

class TraceModel {
 public:
  // Never throws for a bad file: returns nullptr and puts the reason in `error`. `case_index`
  // picks one case of a merged file (trace::list_cases order); a single trace is case 0.
  static std::unique_ptr<TraceModel> open(const std::string& path, std::string& error, int case_index = 0);

  const std::string& path() const { return reader_->path(); }
  const trace::TraceCase& trace_case() const { return reader_->trace_case(); }
  const RunInfo& info() const { return info_; }
  const std::vector<trace::TraceRow>& rows() const { return reader_->rows(); }
  const trace::TraceReader& reader() const { return *reader_; }

  const std::vector<int>& steps() const { return steps_; }
  const std::vector<Mode>& modes() const { return modes_; }
  const std::vector<int>& layers() const { return layers_; }          // kModelLayer (-1) first when present
  const std::vector<std::string>& stages() const { return stages_; }  // in execution order
  int layer_index(int layer) const;
  int stage_index(const std::string& stage) const;

  // A batch run's sequences (one, 0, for any other run). Grids, cells and rows are those of the
  // selected sequence: every panel shows one sequence at a time.
  const std::vector<int>& seqs() const { return seqs_; }
  int seq() const { return seq_; }
  void select_seq(int seq);  // a sequence the trace does not hold leaves the selection as it is
  // How many stages fail in a sequence at a step, over every mode (the sequence picker's counts).
  int failing(int step, int seq) const;

  const Grid* grid(int step, Mode mode) const { return grid(step, mode, seq_); }
  const Grid* grid(int step, Mode mode, int seq) const;
  const Cell* cell(int step, Mode mode, int layer, const std::string& stage) const;
  const trace::TraceRow* row(int step, Mode mode, int layer, const std::string& stage) const {
    return row(step, mode, layer, stage, seq_);
  }
  const trace::TraceRow* row(int step, Mode mode, int layer, const std::string& stage, int seq) const;
  // The candidate's kernel launches (/launches); nullopt for a trace older than launch records.
  const std::optional<std::vector<StepLaunch>>& launches() const { return launches_; }
  // Extra numeric /summary fields (noise floors); empty when the trace has none.
  const std::map<std::string, std::vector<double>>& extras() const { return extras_; }

 private:
  explicit TraceModel(std::unique_ptr<trace::TraceReader> reader);
  void build();

  std::unique_ptr<trace::TraceReader> reader_;
  RunInfo info_;
  std::vector<int> steps_, layers_, seqs_;
  int seq_ = 0;
  std::vector<Mode> modes_;
  std::vector<std::string> stages_;
  std::vector<Grid> grids_;
  std::map<std::tuple<int, int, int, int, int>, int> index_;  // (step, mode, layer, stage index, seq) -> row
  std::optional<std::vector<StepLaunch>> launches_;
  std::map<std::string, std::vector<double>> extras_;
};

}  // namespace ds::view
