// What the compare engine says about one stage: its status and metrics. Traces store these
// rows; reports and the viewer read them. Thresholds are not stored here (policies are kept
// apart from data so a stored trace can be re-judged).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.h"
#include "tensor.h"

namespace ds {

// `filled`: the stage was computed by the reference fill for a partial candidate (`--fill
// reference`), not by the candidate: never judged, never a failure and never counted as a pass.
// `race`: a kernel launch of the step that produced the stage gave a different output under another
// SIMT schedule (`run --race-check`); a failure whatever the values, which a re-judge keeps.
// `leak` and `batch_variant` (`run --batch`, docs/batches.md): perturbing another sequence's inputs
// moved this sequence's stage, or the stage differs from the same sequence run alone by the same
// candidate; findings of the run like `race`, which a re-judge keeps.
// `memory`: a kernel launch of the step that produced the stage made a bad memory access (out of
// bounds, after a free, misaligned, through a null or wild pointer) or a bad free, found by the
// SIMT runtime's memcheck (`run --simt-memcheck`); a finding of the run like `race`.
enum class Status : std::uint8_t {
  pass,
  fail,
  nan,
  shape_mismatch,
  missing,
  skipped,
  crashed,
  filled,
  race,
  leak,
  batch_variant,
  memory
};
// A status a run found by rerunning or watching the candidate (race, leak, batch-variant, memory):
// no tolerance judges it away.
bool is_run_finding(Status s);
enum class Mode : std::uint8_t { isolated, chained };

std::string_view status_name(Status s);
std::optional<Status> parse_status(std::string_view s);
std::string_view mode_name(Mode m);
std::optional<Mode> parse_mode(std::string_view s);
// Whether a status alone makes the run fail: everything but pass and filled. A missing or
// skipped stage is a failure unless the policy expected it (see is_failure(const StageResult&)).
bool is_failure(Status s);

inline constexpr int kUlpBuckets = 8;  // 0, 1, 2-3, 4-15, 16-255, 256-65535, >=65536, NaN/Inf

struct Metrics {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  std::int64_t numel = 0;
  double max_abs = 0;               // max |cand - ref|
  std::int64_t max_abs_index = -1;  // flat index of max_abs
  double max_abs_ref = nan, max_abs_cand = nan;
  double mean_abs = 0;
  double rms = 0;      // sqrt(mean((cand - ref)^2))
  double max_rel = 0;  // max |d| / max(|ref|, tiny): safe near zero
  double max_ulp = 0;  // in the candidate's storage dtype
  double mean_ulp = 0;
  std::array<std::int64_t, kUlpBuckets> ulp_hist{};
  double cosine = 1;
  double nmse = 0;                   // sum d^2 / sum ref^2
  double sqnr_db = 0;                // 10 log10(sum ref^2 / sum d^2); +inf when exact
  double ref_rms = 0;                // scale of the reference tensor
  std::int64_t mismatches = 0;       // elements outside the tolerance
  std::int64_t first_mismatch = -1;  // flat index
  double first_ref = nan, first_cand = nan;
  std::int64_t nan_ref = 0, nan_cand = 0, inf_ref = 0, inf_cand = 0;
  std::int64_t first_nan = -1;  // first index where either side is NaN
  bool inf_agree = true;        // every +-Inf matches in sign and place
  double min_atol = 0;          // smallest atol that passes with rtol as used
  double min_rtol = 0;          // smallest rtol that passes with atol as used
  double atol = 0, rtol = 0;    // the tolerance these counts were taken under
};

struct StageKey {
  int step = 0;
  int layer = 0;
  std::string stage;
  int seq = 0;  // the sequence of a batch run (`run --batch`); 0 in a run of one sequence
  bool operator==(const StageKey&) const = default;
};

// The local check of a chained stage (docs/policies.md, "The local check"): the stage recomputed
// by an honest engine of the candidate's numerics from the candidate's *own* inputs, so the error
// fed in from upstream cancels and what is left is what the candidate's step added itself. Where
// the numerics model the engine exactly (activation quantization, an f16 table), that leaves only
// summation order, which a second honest engine (f32 sums reversed) measures. NaN when not run.
struct LocalCheck {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  double max_abs = nan, rms = nan;              // candidate against the honest step
  double noise_max_abs = nan, noise_rms = nan;  // the two honest steps (f32 sums, exact) apart
  double scale = nan;                           // the honest step's largest |value|
  // The candidate's fitted relative scale against the honest step and its standard error with no
  // bias (compare/bias.h, with the exact-sum honest step as the floor).
  double bias_slope = nan, bias_se = nan;
  // The honest step against the oracle: the error the stage was fed, carried through an honest
  // step. A chained stage is not held to less than that (its upstream error is judged upstream).
  double carried_max_abs = nan, carried_rms = nan;
  // The same fit over each column group of the stage (group_width adjacent columns of every row:
  // one head, or one channel), kept for the group that stands out most after the limit's rise for
  // the number of groups (policy.h local_group_limit): its slope, standard error and index among
  // `groups`. A bug confined to one head or channel is diluted in the whole stage's slope. group < 0:
  // no grouping with enough elements per group.
  double group_slope = nan, group_se = nan;
  int group = -1, groups = 0, group_width = 0;
  bool ran() const { return max_abs == max_abs; }
};

struct StageResult {
  StageKey key;
  Mode mode = Mode::isolated;
  Status status = Status::pass;
  DType cand_dtype = DType::f32;
  Shape shape;
  Metrics m;
  std::string note;  // why it failed, in words ("inherited" etc.)
  // Both sides' values around the first mismatch (from flat index head_from), for the console.
  std::vector<double> head_ref;
  std::vector<double> head_cand;
  std::int64_t head_from = 0;
  std::vector<double> per_token_rel;  // per-row relative error for 2-D stages
  // The policy declared this missing/skipped stage legitimate (a candidate fused it away).
  bool expected = false;
  // Noise floor: the error of the reference run at the candidate's storage dtype against the
  // f64 oracle, same stage and mode. NaN when no floor was computed.
  double floor_max_abs = Metrics::nan, floor_rms = Metrics::nan, floor_mean_abs = Metrics::nan;
  // Systematic error (compare/bias.h): the candidate's fitted relative scale error against the
  // reference, and its standard error under no bias, from the floor. NaN when not computed.
  double bias_slope = Metrics::nan, bias_se = Metrics::nan;
  LocalCheck local;
  // The policy found the candidate's own step worse than an honest engine of its numerics (the
  // local check), whether or not that is what the stage's note gives (Policy::judge).
  bool local_worse = false;
  std::uint64_t cand_hash = 0;  // content_hash of the candidate's stored bytes (0: none)
};

// The run-level verdict of one stage: a failing status that the policy did not expect.
bool is_failure(const StageResult& r);

// A chained failure whose isolated twin (same step, layer and stage) passes: the stage's own
// error is within policy and it fails only on the drift it was fed. Reports note it, the viewer
// draws it apart from local failures; this is the one rule both use. A crash is never inherited.
bool is_inherited_failure(const StageResult& chained, const StageResult& isolated_twin);

// How a run's stages add up: judged excludes stages the reference fill computed.
struct StageCounts {
  std::size_t judged = 0, failed = 0, filled = 0;
};
StageCounts count_stages(const std::vector<StageResult>& results);

// Whether these results can show drift across layers: only a chained lane feeds each stage what
// the candidate computed before it, so only it lets error compound. An isolated-only run (the
// default mode) did not check drift, and every report says so rather than "no drift".
bool drift_checked(const std::vector<StageResult>& results);
inline constexpr std::string_view kDriftNotChecked =
    "drift across layers was NOT checked: isolated mode feeds every stage the reference's inputs, so an "
    "error that compounds layer by layer cannot show (--mode both checks it)";

// The element a failing row is shown by: the first outside its tolerance, else the first NaN,
// else the largest difference (a row failing a statistical limit has every element inside the
// band); -1 when the row has no elements.
std::int64_t evidence_index(const Metrics& m);

}  // namespace ds
