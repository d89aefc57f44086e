// driftscope history: each night's verdicts and per-stage error-to-floor ratios kept in a SQLite
// file, and the trends over the nights (a stage creeping toward its limit while it still passes).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>

#include "commands.h"
#include "history_db.h"
#include "history_plot.h"
#include "history_show.h"
#include "history_trend.h"
#include "report_files.h"
#include "runner.h"
#include "timeout_flag.h"

namespace ds::cli {

namespace {

struct HistoryArgs {
  std::string db, label;
  std::vector<std::string> traces;
  bool replace = false;
  double busy_timeout_s = 10;
  HistoryFilter filter;
  std::size_t last = 0;  // 0: every night
  bool all = false, json = false;
  std::string out;  // plot: the SVG file
};

void add_busy_timeout(CLI::App* cmd, HistoryArgs& args) {
  cmd->add_option("--busy-timeout", args.busy_timeout_s,
                  "Seconds to wait for another process's lock on the database before giving up (exit 2)")
      ->check(seconds_validator(86400, "must be 0 to 86400 seconds"))
      ->capture_default_str();
}

// What `show` and `plot` choose from the database: cases, a stage, the window, every stage.
void add_view_options(CLI::App* cmd, HistoryArgs& args) {
  cmd->add_option("--model", args.filter.model, "Only cases of this model (as given to run --model)");
  cmd->add_option("--candidate", args.filter.candidate, "Only cases of this candidate");
  cmd->add_option("--stage", args.filter.stage,
                  "Only this stage (catalog name, e.g. residual_2), whether or not it failed or creeps");
  cmd->add_option("--last", args.last, "Only the last N nights")->check(CLI::PositiveNumber);
  cmd->add_flag("--all", args.all, "Every stage, not only those that failed some night or creep");
}

int history_add(const HistoryArgs& args) {
  namespace fs = std::filesystem;
  if (args.label.empty()) throw InputError("history add: --label is empty: name the night (DATE/COMMIT)");
  // Every trace is read before the database is opened: a bad trace changes nothing.
  const std::vector<CaseRecord> cases = read_night(args.traces);
  std::error_code ec;
  const bool existed = fs::exists(args.db, ec);
  try {
    HistoryDb db(args.db, HistoryDb::Access::write, args.busy_timeout_s);
    const bool replaced = db.add_night(args.label, args.traces, cases, args.replace);
    const auto nights = db.nights();
    for (const CaseRecord& c : cases)
      fmt::print("  {:<64} {:<10} {} (stage, layer, mode) ratio(s)\n", c.key(), c.outcome, c.stages.size());
    fmt::print("history {}: {} night {} ({} case(s) from {} trace file(s)); {} night(s) stored\n", args.db,
               replaced ? "replaced" : "added", args.label, cases.size(), args.traces.size(), nights.size());
  } catch (const InputError&) {
    // A database this command created and could not fill is removed, not left empty behind.
    if (!existed) fs::remove(args.db, ec);
    throw;
  }
  return kExitParity;
}

// The nights and cases `show` and `plot` draw from, filtered; a filter that matches nothing is an
// InputError listing what is stored.
HistoryView read_view(const HistoryArgs& args) {
  const HistoryDb db(args.db, HistoryDb::Access::read, args.busy_timeout_s);
  const std::vector<NightInfo> nights = db.nights();
  const std::vector<StoredCase> cases = db.cases(args.filter);
  const HistoryFilter& f = args.filter;
  const bool stage_matched =
      f.stage.empty() ||
      std::any_of(cases.begin(), cases.end(), [](const StoredCase& c) { return !c.record.stages.empty(); });
  if ((cases.empty() || !stage_matched) && !(f.model.empty() && f.candidate.empty() && f.stage.empty())) {
    // A misspelt filter would otherwise read as a quiet history.
    std::set<std::string> keys;
    for (const StoredCase& c : db.cases({})) keys.insert(c.record.key());
    std::string stored;
    for (const auto& k : keys) stored += "\n  " + k;
    throw InputError(fmt::format("{}: no stored case matches{}{}{}; stored cases:{}", args.db,
                                 f.model.empty() ? "" : " --model " + f.model,
                                 f.candidate.empty() ? "" : " --candidate " + f.candidate,
                                 f.stage.empty() ? "" : " --stage " + f.stage,
                                 stored.empty() ? " none" : stored));
  }
  return build_history_view(nights, cases,
                            args.last > 0 ? std::optional<std::size_t>(args.last) : std::nullopt);
}

int history_show(const HistoryArgs& args) {
  const HistoryView view = read_view(args);
  const HistoryFilter& f = args.filter;
  if (args.json)
    fmt::print("{}\n", history_json(args.db, view).dump(2));
  else
    print_history(stdout, args.db, view, args.all || !f.stage.empty());
  return kExitParity;
}

int history_plot(const HistoryArgs& args) {
  const HistoryView view = read_view(args);
  write_text(args.out, history_svg(args.db, view, args.all || !args.filter.stage.empty()));
  fmt::print("history {}: {} night(s), {} case(s) drawn in {}\n", args.db, view.nights.size(),
             view.cases.size(), args.out);
  return kExitParity;
}

}  // namespace

void add_history_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<HistoryArgs>();
  CLI::App* history = app.add_subcommand(
      "history",
      "Keep each night's verdicts and per-stage error-to-floor ratios in a SQLite file, and show the trends");
  history->require_subcommand(1);

  CLI::App* add = history->add_subcommand(
      "add", "Store the cases of a night's traces (single or merged) under a label, in one transaction");
  add->add_option("traces", args->traces, "The night's traces (driftscope merge output, or shard traces)")
      ->required();
  add->add_option("--db", args->db, "The history database (created if missing)")->required();
  add->add_option("--label", args->label,
                  "The night's name, e.g. DATE/COMMIT; nights are shown in the order added")
      ->required();
  add->add_flag("--replace", args->replace,
                "Replace the cases of a night already stored under --label (it keeps its place)");
  add_busy_timeout(add, *args);

  CLI::App* show = history->add_subcommand(
      "show",
      "Per case and stage: the error-to-floor ratio night by night, the first night it failed, and "
      "stages creeping (rising steadily, at least 2x, while still passing)");
  show->add_option("--db", args->db, "The history database")->required();
  add_view_options(show, *args);
  show->add_flag("--json", args->json, "Print JSON instead of the table");
  add_busy_timeout(show, *args);

  CLI::App* plot = history->add_subcommand(
      "plot",
      "Draw the trends as an SVG file: per case, each stage's error-to-floor ratio over the nights (log "
      "scale, the floor marked), failed nights ringed, creeping stages dashed");
  plot->add_option("--db", args->db, "The history database")->required();
  plot->add_option("--out", args->out, "The SVG file to write")->required();
  add_view_options(plot, *args);
  add_busy_timeout(plot, *args);

  const auto guarded = [&exit_code](const std::function<int()>& body) {
    try {
      exit_code = body();
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  };
  add->callback([args, guarded] { guarded([&] { return history_add(*args); }); });
  show->callback([args, guarded] { guarded([&] { return history_show(*args); }); });
  plot->callback([args, guarded] { guarded([&] { return history_plot(*args); }); });
}

}  // namespace ds::cli
