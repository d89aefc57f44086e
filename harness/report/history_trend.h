// The trends `history show` reports: per case and stage, the error-to-floor ratio night by night,
// the first night it failed, and whether it is creeping (rising steadily while still passing).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "history_db.h"

namespace ds {

// Creeping: over the nights of the window where the stage has a ratio (at least kCreepMinNights),
// it passed every night, its last ratio is at least kCreepGrowth times its first and at least 1
// (its error has reached the floor: a stage far below the floor moving within that noise is not
// flagged), and no night fell below kCreepSlack times the highest ratio before it.
inline constexpr int kCreepMinNights = 3;
inline constexpr double kCreepGrowth = 2;
inline constexpr double kCreepSlack = 0.9;

// Night-by-night values; each vector has one entry per night of the window.
struct Series {
  std::vector<std::optional<double>> ratio;
  // The stage's status that night; "" where the case (or the stage) is absent that night, and
  // "incomplete" where the case's run did not finish and no flushed row of the stage failed.
  std::vector<std::string> status;
  std::optional<std::size_t> first_failed;  // the first night whose status is a failure
  bool creeping = false;
};

struct LayerTrend {
  int layer = 0;
  std::string mode;
  Series series;
};

struct StageTrend {
  std::string stage;
  // Each night the largest ratio over the stage's layers and modes, and its first failure.
  Series worst;
  std::vector<LayerTrend> layers;
  bool creeping() const;
};

struct CaseTrend {
  CaseRecord key;                     // model, candidate, seed, probe (no stages)
  std::vector<std::string> outcomes;  // "" where the case is absent that night
  std::vector<std::string> verdicts;
  std::optional<std::size_t> first_failed;  // the first night it did not pass (incomplete counts)
  std::vector<StageTrend> stages;
};

struct HistoryView {
  std::vector<NightInfo> nights;  // the window, oldest first
  std::vector<CaseTrend> cases;   // in the order they were first stored
};

// Whether a case's outcome is a failure: anything but pass and skipped (incomplete is one).
bool case_outcome_failed(const std::string& outcome);

// Whether one series creeps (the rule above); `status` as in Series.
bool is_creeping(const std::vector<std::optional<double>>& ratio, const std::vector<std::string>& status);

// The trends over the last `last` nights (all when nullopt) of `nights`, from `cases` as
// HistoryDb::cases returns them.
HistoryView build_history_view(const std::vector<NightInfo>& nights, const std::vector<StoredCase>& cases,
                               std::optional<std::size_t> last);

}  // namespace ds
