#include "trace_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "drift_marks.h"
#include "stage_catalog.h"
#include "summary_extras.h"

namespace ds::view {

namespace {

// Reads a string field of a JSON object without throwing on a missing key or another type.
std::string str_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return {};
    p = &(*p)[k];
  }
  if (p->is_string()) return p->get<std::string>();
  if (p->is_number() || p->is_boolean()) return p->dump();
  if (p->is_array()) {
    std::string s;
    for (const auto& e : *p) s += (s.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
    return s;
  }
  return {};
}

RunInfo read_info(const trace::TraceReader& r) {
  RunInfo info;
  const auto& run = r.run();
  info.model = str_at(run, {"model", "name"});
  info.candidate = str_at(run, {"candidate", "name"});
  info.modes = str_at(run, {"modes"});
  info.policy = str_at(run, {"policy"});
  info.baseline = str_at(run, {"baseline", "name"});
  info.probe = str_at(run, {"probe"});
  if (const auto& res = r.result(); res && res->is_object()) {
    info.finished = true;
    info.verdict = str_at(*res, {"verdict"});
    if (res->contains("first_failure") && (*res)["first_failure"].is_object()) {
      const auto& ff = (*res)["first_failure"];
      const std::string layer = str_at(ff, {"layer"});
      info.first_failure =
          fmt::format("{} @ layer {}, step {} ({})", str_at(ff, {"stage"}), layer == "-1" ? "model" : layer,
                      str_at(ff, {"step"}), str_at(ff, {"mode"}));
    }
    if (res->contains("drift_start_layer") && (*res)["drift_start_layer"].is_number_integer())
      info.drift_start_layer = (*res)["drift_start_layer"].get<int>();
  }
  // The result stores drift_start_layer (null: no drift) only after a chained run.
  const bool chained = info.modes.find("chained") != std::string::npos;
  const bool located = r.result() && r.result()->is_object() && r.result()->contains("drift_start_layer");
  if (info.drift_start_layer)
    info.drift_text = fmt::format("layer {}", *info.drift_start_layer);
  else if (!info.finished)
    info.drift_text = "not known (the run did not finish)";
  else if (!chained)
    // An isolated run feeds every stage the reference's inputs: its passing says nothing of drift.
    info.drift_text = "NOT CHECKED (isolated mode only: --mode both checks drift across layers)";
  else if (located)
    info.drift_text = "none (no drift: the chained error stays near the noise floor)";
  else
    info.drift_text = "not located in this trace";
  return info;
}

}  // namespace

double error_score(const Metrics& m) {
  const double tol = m.atol + m.rtol * m.ref_rms;
  if (tol > 0) return m.max_abs / tol;
  // No tolerance at all (exact policy): any difference is as bad as it gets.
  return m.max_abs > 0 ? std::pow(10.0, kFailDecades) : 0;
}

Rgba cell_colour(double score, Status status, bool nan) {
  if (nan) return kNanColour;
  if (status == Status::skipped) return kSkippedColour;
  if (status == Status::filled) return kFilledColour;
  // A run finding (a race, a leak, batch variance) is as bad as it gets whatever its values: the
  // output depends on the schedule or on the neighbours.
  if (status == Status::missing || status == Status::crashed || status == Status::shape_mismatch ||
      is_run_finding(status))
    return error_colour(std::pow(10.0, kFailDecades));
  if (is_failure(status)) return error_colour(std::isnan(score) ? std::pow(10.0, kFailDecades) : score);
  return error_colour(std::isnan(score) ? 0.0 : std::min(score, 0.999));
}

TraceModel::TraceModel(std::unique_ptr<trace::TraceReader> reader) : reader_(std::move(reader)) {}

std::unique_ptr<TraceModel> TraceModel::open(const std::string& path, std::string& error, int case_index) {
  try {
    const auto cases = trace::list_cases(path);
    if (case_index < 0 || std::size_t(case_index) >= cases.size()) {
      error = fmt::format("--case {}: {} holds {} case(s), numbered 0 to {}", case_index, path, cases.size(),
                          int(cases.size()) - 1);
      return nullptr;
    }
    const std::string& group = cases[std::size_t(case_index)].group;
    // Extras open the file on their own, so before the reader holds it (HDF5 refuses a second
    // open with other flags).
    auto extras = read_summary_extras(path, "floor_", group);
    auto model =
        std::unique_ptr<TraceModel>(new TraceModel(std::make_unique<trace::TraceReader>(path, group)));
    model->extras_ = std::move(extras);
    for (auto it = model->extras_.begin(); it != model->extras_.end();)
      it = it->second.size() == model->rows().size() ? std::next(it) : model->extras_.erase(it);
    model->build();
    return model;
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}

void TraceModel::build() {
  info_ = read_info(*reader_);
  launches_ = reader_->launches();
  const auto& rs = rows();
  for (const auto& row : rs) {
    const auto& k = row.result.key;
    if (std::find(stages_.begin(), stages_.end(), k.stage) == stages_.end()) stages_.push_back(k.stage);
    if (std::find(layers_.begin(), layers_.end(), k.layer) == layers_.end()) layers_.push_back(k.layer);
    if (std::find(steps_.begin(), steps_.end(), k.step) == steps_.end()) steps_.push_back(k.step);
    if (std::find(seqs_.begin(), seqs_.end(), k.seq) == seqs_.end()) seqs_.push_back(k.seq);
    if (std::find(modes_.begin(), modes_.end(), row.result.mode) == modes_.end())
      modes_.push_back(row.result.mode);
  }
  std::sort(layers_.begin(), layers_.end());
  std::sort(steps_.begin(), steps_.end());
  std::sort(modes_.begin(), modes_.end());
  std::sort(seqs_.begin(), seqs_.end());
  if (seqs_.empty()) seqs_.push_back(0);
  seq_ = seqs_.front();
  const std::size_t n_cells = stages_.size() * layers_.size();
  for (int step : steps_)
    for (Mode mode : modes_)
      for (int seq : seqs_) grids_.push_back({step, mode, seq, 0, 0, 0, std::vector<Cell>(n_cells)});
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i].result;
    const int si = stage_index(r.key.stage), li = layer_index(r.key.layer);
    index_[{r.key.step, int(r.mode), r.key.layer, si, r.key.seq}] = int(i);
    auto* g = const_cast<Grid*>(grid(r.key.step, r.mode, r.key.seq));
    Cell& c = g->cells[std::size_t(si) * layers_.size() + std::size_t(li)];
    c.row = int(i);
    c.status = r.status;
    c.score = error_score(r.m);
    c.nan = r.status == Status::nan || r.m.nan_cand != r.m.nan_ref || !r.m.inf_agree;
    c.failing = is_failure(r.status) && r.status != Status::nan;
    c.fill = cell_colour(c.score, r.status, c.nan).packed();
    g->n_fail += is_failure(r.status);
    g->n_nan += c.nan;
  }
  // Chained failures whose isolated twin passes only carry an earlier stage's error.
  for (const auto& row : rs) {
    const StageResult& r = row.result;
    if (r.mode != Mode::chained || !is_failure(r.status)) continue;
    const trace::TraceRow* twin = this->row(r.key.step, Mode::isolated, r.key.layer, r.key.stage, r.key.seq);
    if (!(twin && is_inherited_failure(r, twin->result)) && r.note.find("inherited") == std::string::npos)
      continue;
    auto* g = const_cast<Grid*>(grid(r.key.step, r.mode, r.key.seq));
    Cell& c = g->cells[std::size_t(stage_index(r.key.stage)) * layers_.size() +
                       std::size_t(layer_index(r.key.layer))];
    c.inherited = true;
    c.fill = inherited_fill(Rgba::unpack(c.fill)).packed();
    ++g->n_inherited;
  }
}

int TraceModel::layer_index(int layer) const {
  const auto it = std::find(layers_.begin(), layers_.end(), layer);
  return it == layers_.end() ? -1 : int(it - layers_.begin());
}

int TraceModel::stage_index(const std::string& stage) const {
  const auto it = std::find(stages_.begin(), stages_.end(), stage);
  return it == stages_.end() ? -1 : int(it - stages_.begin());
}

void TraceModel::select_seq(int seq) {
  if (std::find(seqs_.begin(), seqs_.end(), seq) != seqs_.end()) seq_ = seq;
}

int TraceModel::failing(int step, int seq) const {
  int n = 0;
  for (Mode mode : modes_)
    if (const Grid* g = grid(step, mode, seq)) n += g->n_fail;
  return n;
}

const Grid* TraceModel::grid(int step, Mode mode, int seq) const {
  for (const auto& g : grids_)
    if (g.step == step && g.mode == mode && g.seq == seq) return &g;
  return nullptr;
}

const Cell* TraceModel::cell(int step, Mode mode, int layer, const std::string& stage) const {
  const Grid* g = grid(step, mode);
  const int si = stage_index(stage), li = layer_index(layer);
  if (!g || si < 0 || li < 0) return nullptr;
  return &g->cells[std::size_t(si) * layers_.size() + std::size_t(li)];
}

const trace::TraceRow* TraceModel::row(int step, Mode mode, int layer, const std::string& stage,
                                       int seq) const {
  const auto it = index_.find({step, int(mode), layer, stage_index(stage), seq});
  return it == index_.end() ? nullptr : &rows()[std::size_t(it->second)];
}

}  // namespace ds::view
