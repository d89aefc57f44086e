#include "result.h"

#include <array>

namespace ds {

namespace {
constexpr std::array<std::string_view, 12> kStatus = {"pass",    "fail",    "nan",           "shape-mismatch",
                                                      "missing", "skipped", "crashed",       "filled",
                                                      "race",    "leak",    "batch-variant", "memory"};
}

std::string_view status_name(Status s) {
  return std::size_t(s) < kStatus.size() ? kStatus[std::size_t(s)] : "?";
}

std::optional<Status> parse_status(std::string_view s) {
  for (std::size_t i = 0; i < kStatus.size(); ++i)
    if (kStatus[i] == s) return Status(i);
  return std::nullopt;
}

std::string_view mode_name(Mode m) { return m == Mode::isolated ? "isolated" : "chained"; }

std::optional<Mode> parse_mode(std::string_view s) {
  if (s == "isolated") return Mode::isolated;
  if (s == "chained") return Mode::chained;
  return std::nullopt;
}

bool is_run_finding(Status s) {
  return s == Status::race || s == Status::leak || s == Status::batch_variant || s == Status::memory;
}

bool is_failure(Status s) { return s != Status::pass && s != Status::filled; }

bool is_inherited_failure(const StageResult& chained, const StageResult& isolated_twin) {
  return chained.mode == Mode::chained && isolated_twin.mode == Mode::isolated && is_failure(chained) &&
         chained.status != Status::crashed && isolated_twin.status == Status::pass &&
         chained.key == isolated_twin.key;
}

bool is_failure(const StageResult& r) {
  if (r.expected && (r.status == Status::missing || r.status == Status::skipped)) return false;
  return is_failure(r.status);
}

StageCounts count_stages(const std::vector<StageResult>& results) {
  StageCounts n;
  for (const auto& r : results) {
    n.filled += r.status == Status::filled;
    n.failed += is_failure(r);
  }
  n.judged = results.size() - n.filled;
  return n;
}

bool drift_checked(const std::vector<StageResult>& results) {
  for (const auto& r : results)
    if (r.mode == Mode::chained) return true;
  return false;
}

std::int64_t evidence_index(const Metrics& m) {
  if (m.first_mismatch >= 0) return m.first_mismatch;
  if (m.first_nan >= 0) return m.first_nan;
  return m.max_abs_index;
}

}  // namespace ds
