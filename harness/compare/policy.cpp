#include "policy.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "stage_catalog.h"
#include "user_file.h"

namespace ds {

namespace {

struct DtypeDefault {
  double atol, rtol;
};
// torch.testing.assert_close defaults.
DtypeDefault dtype_default(DType t) {
  switch (t) {
    case DType::f16: return {1e-5, 1e-3};
    case DType::bf16: return {1e-5, 1.6e-2};
    case DType::f32: return {1e-5, 1.3e-6};
    case DType::f64: return {1e-7, 1e-7};
    case DType::i32: return {0, 0};
  }
  return {1e-5, 1e-3};
}

// A floor as a note prints it: the number the limit was taken from, i.e. the recorded floor raised
// to half an ULP of the stage's scale, saying so when raised (a note that divides by one number and
// prints another reads as wrong arithmetic).
std::string floor_text(double recorded, DType t, double ref_rms) {
  const double used = floor_of(recorded, t, ref_rms);
  if (used == recorded) return fmt::format("{:.3g}", used);
  return fmt::format("{:.3g} (the recorded {:.3g} raised to half an {} ULP of the stage's rms {:.3g})", used,
                     recorded, dtype_name(t), ref_rms);
}

constexpr const char* kInfDisagree = "+-Inf where the reference has none (or the other way round)";

Rule builtin(Rule::Kind kind, std::optional<Mode> mode) {
  Rule r;
  r.where = "built-in";
  r.kind = kind;
  r.mode = mode;
  r.k = kDefaultFloorFactor;
  r.floor_relief = kind == Rule::Kind::dtype;
  if (kind == Rule::Kind::dtype) {
    r.rms_k = kDefaultFloorRmsFactor;
    r.bias_z = kDefaultBiasZ;
  }
  if (kind == Rule::Kind::noise_floor) {
    r.local_k = kDefaultFloorFactor;
    r.local_z = kDefaultBiasZ;
  }
  return r;
}

// The local check's verdict on a stage under `rule`: empty when it passes or did not run, else why.
std::string local_failure(const Rule& rule, const StageResult& r) {
  const LocalCheck& l = r.local;
  if (!(rule.local_k > 0) || !l.ran()) return {};
  const LocalNoise n = local_noise(r);
  const std::string_view worse = kLocalWorse;
  if (l.max_abs > rule.local_k * n.max_abs)
    return fmt::format(
        "{}: max|cand - honest step| {:.3g} is {:.3g}x what two honest engines differ by ({:.3g}; limit "
        "{:g}x)",
        worse, l.max_abs, l.max_abs / n.max_abs, n.max_abs, rule.local_k);
  if (l.rms > rule.local_k * n.rms)
    return fmt::format(
        "{}: the rms of cand - honest step {:.3g} is {:.3g}x what two honest engines differ by ({:.3g}; "
        "limit {:g}x)",
        worse, l.rms, l.rms / n.rms, n.rms, rule.local_k);
  if (const auto z = local_bias_z_of(r); rule.local_z > 0 && z && std::fabs(*z) > rule.local_z)
    return fmt::format(
        "{}: its output is scaled by 1 {} {:.2g} against the honest step, {:.1f} standard errors from none "
        "(limit {:g}): a bias on every element (a wrong scale or divisor, a rounding direction)",
        worse, l.bias_slope < 0 ? '-' : '+', std::fabs(l.bias_slope), std::fabs(*z), rule.local_z);
  if (const auto z = local_group_z_of(r); rule.local_z > 0 && z) {
    const double limit = local_group_limit(rule.local_z, l.groups);
    if (std::fabs(*z) > limit) {
      const std::string what =
          l.group_width == 1 ? fmt::format("channel {} of {}", l.group, l.groups)
                             : fmt::format("head {} of {} (columns {}..{} of every row)", l.group, l.groups,
                                           l.group * l.group_width, (l.group + 1) * l.group_width - 1);
      return fmt::format(
          "{}: its {} is scaled by 1 {} {:.2g} against the honest step, {:.1f} standard errors from none "
          "(limit {:.2g}, {:g} raised for {} groups): a bias confined to one {}",
          worse, what, l.group_slope < 0 ? '-' : '+', std::fabs(l.group_slope), std::fabs(*z), limit,
          rule.local_z, l.groups, l.group_width == 1 ? "channel" : "head");
    }
  }
  return {};
}

}  // namespace

// Half an ULP at 1.0: the least error storing a value of the stage's scale can cost. A floor
// below it (a stage that happened to round exactly in the floor run) is raised to it, so a
// zero floor does not demand bit-exactness.
double unit_roundoff(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    case DType::f32: return 0x1p-24;
    default: return 0x1p-53;
  }
}

double floor_of(double floor, DType t, double ref_rms) {
  return std::fmax(floor, unit_roundoff(t) * ref_rms);
}

std::optional<double> floor_rms_limit(const Rule& rule, const StageResult& r) {
  if (!(rule.rms_k > 0) || std::isnan(r.floor_rms) || r.m.numel < kFloorRmsMinElements) return std::nullopt;
  if (r.cand_dtype != DType::f16 && r.cand_dtype != DType::bf16) return std::nullopt;
  return rule.rms_k * floor_of(r.floor_rms, r.cand_dtype, r.m.ref_rms);
}

std::optional<double> bias_z_of(const StageResult& r) {
  if (!(r.bias_se > 0) || !std::isfinite(r.bias_slope)) return std::nullopt;
  return r.bias_slope / r.bias_se;
}

LocalNoise local_noise(const StageResult& r) {
  // Two honest engines that sum alike still round differently where a value lies between two
  // stored ones: the spread is raised to half an ULP of the stage's largest value (max) and of its
  // scale (rms).
  const double u = unit_roundoff(r.cand_dtype);
  return {std::fmax(r.local.noise_max_abs, u * r.local.scale), std::fmax(r.local.noise_rms, u * r.m.ref_rms)};
}

double local_ratio(const StageResult& r) {
  if (!r.local.ran()) return Metrics::nan;
  const LocalNoise n = local_noise(r);
  return std::fmax(r.local.max_abs / n.max_abs, r.local.rms / n.rms);
}

std::optional<double> local_bias_z_of(const StageResult& r) {
  if (!(r.local.bias_se > 0) || !std::isfinite(r.local.bias_slope)) return std::nullopt;
  return r.local.bias_slope / r.local.bias_se;
}

std::optional<double> local_group_z_of(const StageResult& r) {
  const LocalCheck& l = r.local;
  if (l.group < 0 || l.groups < 1 || !(l.group_se > 0) || !std::isfinite(l.group_slope)) return std::nullopt;
  return l.group_slope / l.group_se;
}

double local_group_limit(double k, int groups) {
  return std::sqrt(k * k + 2 * std::log(double(std::max(groups, 1))));
}

double chained_floor(double recorded, double carried) {
  return std::isnan(carried) ? recorded : std::fmax(recorded, carried);
}

Tolerance dtype_tolerance(DType cand_dtype, double ref_rms) {
  const auto d = dtype_default(cand_dtype);
  return {std::max(d.atol, d.rtol * ref_rms), d.rtol};
}

bool Rule::matches(const StageKey& key, Mode m) const {
  if (mode && *mode != m) return false;
  if (!any_layer && (key.layer < layer_min || key.layer > layer_max)) return false;
  return std::regex_match(key.stage, stage);
}

Policy Policy::dtype_defaults() {
  Policy p;
  p.rules_ = {builtin(Rule::Kind::dtype, Mode::isolated), builtin(Rule::Kind::noise_floor, Mode::chained)};
  return p;
}

const Rule* Policy::rule_for(const StageKey& key, Mode mode, bool present) const {
  const Rule* fallback = nullptr;
  for (const Rule& r : rules_) {
    // An `expect:` rule speaks only for stages the candidate did not produce.
    if (present && r.kind == Rule::Kind::expect) continue;
    if (!r.matches(key, mode)) continue;
    if (!r.is_default) return &r;
    if (!fallback) fallback = &r;
  }
  return fallback;
}

Tolerance Policy::tolerance(const StageResult& r) const {
  // Expert ids are decisions: exact (a legitimate near-tie flip is settled before, moe_ties.h).
  if (is_discrete_stage(r.key.stage)) return {0, 0};
  const Rule* rule = rule_for(r.key, r.mode, true);
  if (rule && rule->kind == Rule::Kind::bit_exact) return {0, 0};
  if (rule && rule->kind == Rule::Kind::noise_floor) {
    if (std::isnan(r.floor_max_abs)) return {0, 0};
    return {rule->k *
                floor_of(chained_floor(r.floor_max_abs, r.local.carried_max_abs), r.cand_dtype, r.m.ref_rms),
            0};
  }
  Tolerance t = dtype_tolerance(r.cand_dtype, r.m.ref_rms);
  if (rule && rule->floor_relief && !std::isnan(r.floor_max_abs))
    t.atol = std::max(t.atol, rule->k * floor_of(r.floor_max_abs, r.cand_dtype, r.m.ref_rms));
  return t;
}

void Policy::judge(StageResult& r) const {
  if (r.status == Status::filled) return;  // computed by the reference fill: nothing to judge
  const bool present = r.status != Status::missing && r.status != Status::skipped;
  const Rule* rule = rule_for(r.key, r.mode, present);
  r.expected = false;
  if (!present) {
    r.expected = rule && rule->kind == Rule::Kind::expect && rule->expect == r.status;
    if (!r.expected && r.note.empty())
      r.note = fmt::format("{} stage and no policy rule expects it", status_name(r.status));
    return;
  }
  // A race is a finding of the run itself, which no tolerance can judge away.
  if (r.status == Status::shape_mismatch || r.status == Status::crashed || is_run_finding(r.status)) return;
  const Metrics& m = r.m;
  r.note.clear();
  r.local_worse = false;
  if (m.nan_cand > m.nan_ref || (m.nan_cand > 0 && m.mismatches > 0)) {
    r.status = Status::nan;
    r.note = fmt::format("{} NaN in the candidate ({} in the reference)", m.nan_cand, m.nan_ref);
    return;
  }
  if (!rule) {
    r.status = Status::fail;
    r.note = "no policy rule matches this stage and the policy has no default rule";
    return;
  }
  bool ok = m.inf_agree;
  switch (rule->kind) {
    case Rule::Kind::dtype: {
      ok = ok && m.mismatches == 0;
      const auto rms_limit = floor_rms_limit(*rule, r);
      if (!m.inf_agree) {
        r.note = kInfDisagree;
      } else if (ok && rms_limit && m.rms > *rms_limit) {
        ok = false;
        r.note = fmt::format(
            "rms {:.3g} is {:.3g}x the {} noise floor's rms {} (limit {:g}x), though every element is "
            "within tolerance: a small error on every element (a reduced-precision accumulator, a slightly "
            "wrong scale)",
            m.rms, m.rms / floor_of(r.floor_rms, r.cand_dtype, m.ref_rms), dtype_name(r.cand_dtype),
            floor_text(r.floor_rms, r.cand_dtype, m.ref_rms), rule->rms_k);
      } else if (const auto z = bias_z_of(r); ok && rule->bias_z > 0 && z && std::fabs(*z) > rule->bias_z) {
        ok = false;
        r.note = fmt::format(
            "systematic error: the output is scaled by 1 {} {:.2g} against the reference, {:.1f} standard "
            "errors of the {} noise floor from none (limit {:g}), though every element is within "
            "tolerance: a bias on every element (a wrong scale or divisor, a rounding direction)",
            r.bias_slope < 0 ? '-' : '+', std::fabs(r.bias_slope), std::fabs(*z), dtype_name(r.cand_dtype),
            rule->bias_z);
      }
      break;
    }
    case Rule::Kind::bit_exact:
      ok = ok && m.max_ulp == 0 && m.mismatches == 0;
      if (!ok) r.note = fmt::format("not bit-exact: max {} ULP ({})", m.max_ulp, rule->where);
      break;
    case Rule::Kind::noise_floor: {
      if (std::isnan(r.floor_max_abs)) {
        ok = false;
        r.note = "noise-floor rule but no floor was recorded for this stage";
        break;
      }
      const double floor_max = chained_floor(r.floor_max_abs, r.local.carried_max_abs);
      const double floor_rms = chained_floor(r.floor_rms, r.local.carried_rms);
      const double rms_limit = rule->k * floor_of(floor_rms, r.cand_dtype, m.ref_rms);
      ok = ok && m.mismatches == 0 && m.rms <= rms_limit;
      // Say which limit tripped: a stage can fail on its rms with every element inside the band.
      if (!m.inf_agree)
        r.note = kInfDisagree;
      else if (m.mismatches > 0)
        r.note = fmt::format(
            "{} element(s) above {:g} x noise floor: max|d| {:.3g} vs floor {}, rms {:.3g} "
            "vs floor {}",
            m.mismatches, rule->k, m.max_abs, floor_text(floor_max, r.cand_dtype, m.ref_rms), m.rms,
            floor_text(floor_rms, r.cand_dtype, m.ref_rms));
      else if (!ok)
        r.note = fmt::format(
            "rms {:.3g} is {:.3g}x the floor's rms {} (limit {:g}x), though every element is within "
            "{:g} x the floor's max|d| {}",
            m.rms, m.rms / floor_of(floor_rms, r.cand_dtype, m.ref_rms),
            floor_text(floor_rms, r.cand_dtype, m.ref_rms), rule->k, rule->k,
            floor_text(floor_max, r.cand_dtype, m.ref_rms));
      // Judged even where the accumulated error already failed: the run's local-check line names
      // the first stage the candidate's own step made worse, not the first one that failed.
      const std::string local = local_failure(*rule, r);
      r.local_worse = !local.empty();
      if (ok && r.local_worse) {
        r.note = local;
        ok = false;
      }
      break;
    }
    case Rule::Kind::predicates:
      for (const Predicate& p : rule->predicates)
        if (!p.holds(r)) {
          ok = false;
          r.note = fmt::format("{} fails ({} = {:.4g}, {})", p.str(), p.metric, *metric_value(r, p.metric),
                               rule->where);
          break;
        }
      break;
    case Rule::Kind::expect: break;
  }
  r.status = ok ? Status::pass : Status::fail;
}

// ---- YAML ----

namespace {

std::string at(const std::string& source, const YAML::Node& n) {
  return fmt::format("{}:{}", source, n.Mark().line + 1);
}

[[noreturn]] void bad(const std::string& source, const YAML::Node& n, std::string_view field,
                      const std::string& why) {
  throw PolicyError(fmt::format("{}: field '{}': {}", at(source, n), field, why));
}

template <class T>
T scalar(const std::string& source, const YAML::Node& n, std::string_view field) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    bad(source, n, field, "wrong type");
  }
}

// A factor or limit: a number above zero.
double positive(const std::string& source, const YAML::Node& n, std::string_view field,
                std::string_view what) {
  const double v = scalar<double>(source, n, field);
  if (!(v > 0)) bad(source, n, field, fmt::format("the {} must be positive", what));
  return v;
}

// A mapping's key. YAML allows any node there (`? [a, b]`, `? {a: 1}`); a policy's
// fields are names.
std::string key_of(const std::string& source, const YAML::Node& k) {
  if (!k.IsScalar())
    throw PolicyError(fmt::format("{}: a field name must be a word, not {}", at(source, k),
                                  k.IsMap()        ? "a mapping"
                                  : k.IsSequence() ? "a list"
                                                   : "empty"));
  return k.Scalar();
}

void parse_layers(Rule& r, const std::string& source, const YAML::Node& n) {
  const std::string s = scalar<std::string>(source, n, "layers");
  const auto colon = s.find(':');
  try {
    std::size_t used = 0;
    if (colon == std::string::npos) {
      r.layer_min = r.layer_max = std::stoi(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
    } else {
      const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
      r.layer_min = a.empty() ? 0 : std::stoi(a);
      r.layer_max = b.empty() ? std::numeric_limits<int>::max() : std::stoi(b);
    }
  } catch (const std::exception&) {
    bad(source, n, "layers", fmt::format("'{}' is not N or A:B (inclusive)", s));
  }
  if (r.layer_min > r.layer_max) bad(source, n, "layers", fmt::format("empty range '{}'", s));
  r.any_layer = false;
}

Rule parse_rule(const std::string& source, const YAML::Node& n) {
  if (!n.IsMap()) throw PolicyError(fmt::format("{}: a rule must be a mapping", at(source, n)));
  Rule r;
  r.where = at(source, n);
  int kinds = 0;
  for (const auto& kv : n) {
    const std::string key = key_of(source, kv.first);
    const YAML::Node& v = kv.second;
    if (key == "stage") {
      r.stage_src = scalar<std::string>(source, v, key);
      try {
        r.stage = compile_stage_pattern(r.stage_src);
      } catch (const std::invalid_argument& e) {
        bad(source, v, key, fmt::format("bad regex: {}", e.what()));
      }
    } else if (key == "layers") {
      parse_layers(r, source, v);
    } else if (key == "mode") {
      const auto m = parse_mode(scalar<std::string>(source, v, key));
      if (!m) bad(source, v, key, "must be isolated or chained");
      r.mode = m;
    } else if (key == "default") {
      r.is_default = scalar<bool>(source, v, key);
    } else if (key == "check") {
      ++kinds;
      r.kind = Rule::Kind::predicates;
      try {
        r.predicates = parse_predicates(scalar<std::string>(source, v, key));
      } catch (const std::invalid_argument& e) {
        bad(source, v, key, e.what());
      }
    } else if (key == "noise_floor") {
      ++kinds;
      r.kind = Rule::Kind::noise_floor;
      r.k = positive(source, v, key, "factor k");
    } else if (key == "bit_exact") {
      ++kinds;
      r.kind = Rule::Kind::bit_exact;
      if (!scalar<bool>(source, v, key)) bad(source, v, key, "only `bit_exact: true` means something");
    } else if (key == "dtype_defaults") {
      ++kinds;
      r.kind = Rule::Kind::dtype;
      if (!scalar<bool>(source, v, key)) bad(source, v, key, "only `dtype_defaults: true` means something");
    } else if (key == "floor_relief") {
      // The built-in isolated rule's relief, written out: atol >= k x the stage's noise floor.
      r.floor_relief = true;
      r.k = positive(source, v, key, "factor k");
    } else if (key == "floor_rms") {
      // The built-in isolated rule's statistical limit, written out: rms <= k x the floor's rms.
      r.rms_k = positive(source, v, key, "factor k");
    } else if (key == "bias_z") {
      // The built-in isolated rule's systematic-error limit, written out: |slope| <= k standard errors.
      r.bias_z = positive(source, v, key, "limit");
    } else if (key == "local") {
      // The built-in chained rule's local check, written out: within k x two honest engines' spread.
      r.local_k = positive(source, v, key, "factor k");
    } else if (key == "local_bias_z") {
      r.local_z = positive(source, v, key, "limit");
    } else if (key == "expect") {
      ++kinds;
      r.kind = Rule::Kind::expect;
      const auto s = parse_status(scalar<std::string>(source, v, key));
      if (!s || (*s != Status::missing && *s != Status::skipped))
        bad(source, v, key, "must be missing or skipped");
      r.expect = *s;
    } else if (key == "why") {
      // Free text for the reader of the policy file.
    } else {
      bad(source, kv.first, key,
          "unknown field (use stage, layers, mode, default, check, noise_floor, bit_exact, dtype_defaults, "
          "floor_relief, floor_rms, bias_z, local, local_bias_z, expect, why)");
    }
  }
  if (kinds != 1)
    throw PolicyError(
        fmt::format("{}: a rule needs exactly one of check, noise_floor, bit_exact, dtype_defaults, "
                    "expect (found {})",
                    r.where, kinds));
  if (r.floor_relief && r.kind != Rule::Kind::dtype)
    throw PolicyError(
        fmt::format("{}: floor_relief widens a dtype_defaults rule; this rule has none", r.where));
  if (r.rms_k > 0 && r.kind != Rule::Kind::dtype)
    throw PolicyError(fmt::format("{}: floor_rms limits a dtype_defaults rule; this rule has none", r.where));
  if (r.bias_z > 0 && r.kind != Rule::Kind::dtype)
    throw PolicyError(fmt::format("{}: bias_z limits a dtype_defaults rule; this rule has none", r.where));
  if ((r.local_k > 0 || r.local_z > 0) && r.kind != Rule::Kind::noise_floor)
    throw PolicyError(
        fmt::format("{}: local and local_bias_z go with a noise_floor rule; this rule has none", r.where));
  return r;
}

}  // namespace

Policy Policy::from_yaml(const std::string& text, const std::string& source) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw PolicyError(fmt::format("{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  if (!doc.IsMap())
    throw PolicyError(fmt::format("{}: a policy is a mapping with `name` and `rules`", source));
  Policy p;
  p.name_ = source;
  for (const auto& kv : doc) {
    const std::string key = key_of(source, kv.first);
    if (key == "name")
      p.name_ = scalar<std::string>(source, kv.second, key);
    else if (key == "description")
      continue;
    else if (key == "rules") {
      if (!kv.second.IsSequence()) bad(source, kv.second, key, "must be a list of rules");
      for (const auto& r : kv.second) p.rules_.push_back(parse_rule(source, r));
    } else
      bad(source, kv.first, key, "unknown top-level field (use name, description, rules)");
  }
  if (p.rules_.empty()) throw PolicyError(fmt::format("{}: field 'rules': the policy has no rules", source));
  return p;
}

Policy Policy::from_file(const std::string& path) {
  return from_yaml(read_user_text<PolicyError>(path, kMaxConfigFileBytes, "policy file"), path);
}

}  // namespace ds
