// Tolerance policies: how metrics become a status. Kept apart from the data so a stored
// trace can be re-judged under another policy (docs/policies.md describes the YAML file).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics.h"
#include "result.h"

namespace ds {

// A policy file that does not parse; the message names the file, line and field.
struct PolicyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `metric op number`, e.g. `max_abs <= 1e-3`.
struct Predicate {
  enum class Op { le, lt, ge, gt, eq, ne };
  std::string metric;
  Op op = Op::le;
  double value = 0;
  bool holds(const StageResult& r) const;  // false when the metric is NaN
  std::string str() const;
};

// Parses predicates joined by `and`; throws std::invalid_argument naming the bad part.
std::vector<Predicate> parse_predicates(const std::string& text);
// The value of a named metric of a stage (max_abs, cosine, floor_rms, ...); nullopt if unknown.
std::optional<double> metric_value(const StageResult& r, const std::string& metric);

struct Rule {
  enum class Kind { dtype, noise_floor, bit_exact, predicates, expect };
  std::string where;  // "file:line" (or "built-in"), for notes and errors
  // Which stages it applies to.
  std::string stage_src = ".*";
  std::regex stage{".*"};
  int layer_min = std::numeric_limits<int>::min(), layer_max = std::numeric_limits<int>::max();
  bool any_layer = true;  // false: only layers in [layer_min, layer_max] (not model-level stages)
  std::optional<Mode> mode;
  bool is_default = false;  // used only when no other rule matches
  // What it demands.
  Kind kind = Kind::dtype;
  std::vector<Predicate> predicates;  // Kind::predicates
  double k = 1;                       // Kind::noise_floor: error <= k x floor
  // Kind::dtype: atol is at least k x the stage's noise floor when one was recorded. The
  // built-in rule sets it: the max error of a correct candidate over a large stage (logits of a
  // 150k vocabulary) is the tail of many rounding errors, which a per-element dtype tolerance
  // scaled to the stage's RMS does not cover; the floor run measures that tail.
  bool floor_relief = false;
  // Kind::dtype, > 0: the stage's error RMS is at most rms_k x the floor's RMS (see
  // floor_rms_limit). The built-in rule sets it: a reduced-precision accumulator puts every element
  // inside the per-element band, but its error spreads over all of them, which the RMS sees.
  double rms_k = 0;
  // Kind::dtype, > 0: the stage's systematic error (its fitted scale against the reference,
  // compare/bias.h) is at most bias_z standard errors of the floor's from zero (see bias_z_of).
  // The built-in rule sets it (kDefaultBiasZ); 0 turns it off.
  double bias_z = 0;
  // Kind::noise_floor, > 0: where the stage has a local check (result.h LocalCheck), the candidate
  // is within local_k x what two honest engines of its numerics differ by, given its own inputs
  // (max and rms), and its systematic error against the honest step within local_z standard
  // errors. The built-in chained rule sets both (kDefaultFloorFactor, kDefaultBiasZ).
  double local_k = 0;
  double local_z = 0;
  Status expect = Status::missing;  // Kind::expect: missing or skipped is legitimate
  bool matches(const StageKey& key, Mode m) const;
};

class Policy {
 public:
  // The built-in policy. Isolated mode: the dtype defaults (torch.testing.assert_close's rtol
  // per dtype) with atol scaled to the stage: reductions over operands stored in the
  // candidate's dtype make the absolute error scale with the operands, not with each output
  // element, so an elementwise atol of 1e-5 would flag honest f16 rounding in every projection
  // whose output crosses zero. Chained mode: the noise floor (error <= k x the error of the
  // reference run at the candidate's storage dtype), because accumulated rounding error grows
  // layer by layer and no fixed per-element tolerance tells honest drift from a bug.
  static Policy dtype_defaults();
  // A YAML policy file (fixtures/policies/*.yaml); throws PolicyError naming line and field.
  static Policy from_file(const std::string& path);
  static Policy from_yaml(const std::string& text, const std::string& source = "<policy>");

  std::string name() const { return name_; }
  const std::vector<Rule>& rules() const { return rules_; }
  // The rule that judges a stage (present: the candidate produced it), or nullptr.
  const Rule* rule_for(const StageKey& key, Mode mode, bool present) const;
  // The elementwise tolerance the stage's mismatch count is taken under. Needs r.key, r.mode,
  // r.cand_dtype, r.m.ref_rms and the floor fields.
  Tolerance tolerance(const StageResult& r) const;
  // Sets r.status (pass/fail/nan from metrics taken under tolerance(r); missing/skipped keep
  // their status and become `expected` when a rule says so), and r.note on failure.
  void judge(StageResult& r) const;

 private:
  std::string name_ = "dtype-defaults";
  std::vector<Rule> rules_;
};

// The elementwise tolerance of the dtype defaults for a stage of RMS `ref_rms`.
Tolerance dtype_tolerance(DType cand_dtype, double ref_rms);
// The k of the built-in noise-floor rules: a correct candidate that rounds like the reference
// at its storage dtype stays within a few times the floor; a bug is orders of magnitude above.
inline constexpr double kDefaultFloorFactor = 8;
// The built-in statistical limit: a correct 16-bit candidate rounds each stored value once, as the
// floor run does, so its error RMS sits near the floor's (at most 1.11x over the tiny presets, seeds
// 0-9, every probe, simt and cpu-f16); one more rounding per element, at the output's own scale,
// already makes it about 2x (docs/policies.md).
inline constexpr double kDefaultFloorRmsFactor = 2;
// Fewer elements than this make the RMS a sample too small to judge by.
inline constexpr std::int64_t kFloorRmsMinElements = 32;
// The RMS limit a rule with rms_k puts on a stage, or nullopt where it does not apply: no floor was
// recorded, too few elements, or a storage dtype wider than 16 bits (an f32 stage's floor is one f32
// rounding, below the accumulation error of any correct f32 kernel over a long reduction, while a
// 16-bit rounding stays above f32 accumulation error up to reductions of 2^26 terms).
std::optional<double> floor_rms_limit(const Rule& rule, const StageResult& r);
// The built-in systematic-error limit, in standard errors: with no bias the slope
// over a stage is a sum of many small independent errors, close to normal, so |z| > 6 happens by chance once
// in 5e8 stages (two-sided); a run judges at most ~1e5 stages (docs/policies.md, "Systematic error").
inline constexpr double kDefaultBiasZ = 6;
// How many standard errors a stage's systematic error lies from zero (slope / se), or nullopt
// where no floor gave a standard error.
std::optional<double> bias_z_of(const StageResult& r);
// What two honest engines of the candidate's numerics differ by at a stage with a local check (max
// and rms), raised to half an ULP of the stage's largest value and of its scale.
struct LocalNoise {
  double max_abs, rms;
};
LocalNoise local_noise(const StageResult& r);
// The larger of the local check's two ratios to that spread (max, rms); NaN where it did not run.
double local_ratio(const StageResult& r);
// How every local check failure's note begins (reports find them by it).
inline constexpr std::string_view kLocalWorse =
    "worse than an honest engine of its numerics given its own inputs";
// The local check's systematic error in standard errors, or nullopt where it did not run.
std::optional<double> local_bias_z_of(const StageResult& r);
// The same for the column group that stands out most (a head or a channel), or nullopt where no
// grouping had enough elements.
std::optional<double> local_group_z_of(const StageResult& r);
// The limit on that group's |z| for a stage cut into `groups` groups: the largest of G chance values
// is larger than one, and for normal tails P(|z| > t) is about exp(-t^2 / 2), so the per-stage
// limit k rises to sqrt(k^2 + 2 ln G), which G groups exceed by chance about as often as one
// stage exceeds k (a Bonferroni correction).
double local_group_limit(double k, int groups);
// The floor a chained stage's accumulated error is held to: the recorded floor, or where a local
// check ran, the error an honest step carried from the candidate's own inputs when that is larger
// (a stage that amplifies its input's error, a norm over a near-zero row, is not blamed for it).
double chained_floor(double recorded, double carried);
// Half an ULP at 1.0 in `t`.
double unit_roundoff(DType t);
// A recorded floor, raised to half an ULP of the stage's scale so that a stage that happened to
// round exactly does not demand bit-exactness.
double floor_of(double floor, DType t, double ref_rms);

}  // namespace ds
