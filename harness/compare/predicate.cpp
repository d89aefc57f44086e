// The predicate language of policy rules: `metric op number` joined by `and`.
#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "policy.h"

namespace ds {

std::optional<double> metric_value(const StageResult& r, const std::string& name) {
  const Metrics& m = r.m;
  if (name == "max_abs") return m.max_abs;
  if (name == "mean_abs") return m.mean_abs;
  if (name == "rms") return m.rms;
  if (name == "max_rel") return m.max_rel;
  if (name == "max_ulp") return m.max_ulp;
  if (name == "mean_ulp") return m.mean_ulp;
  if (name == "cosine") return m.cosine;
  if (name == "nmse") return m.nmse;
  if (name == "sqnr_db") return m.sqnr_db;
  if (name == "ref_rms") return m.ref_rms;
  if (name == "mismatches") return double(m.mismatches);
  if (name == "nan_cand") return double(m.nan_cand);
  if (name == "nan_ref") return double(m.nan_ref);
  if (name == "inf_cand") return double(m.inf_cand);
  if (name == "inf_ref") return double(m.inf_ref);
  if (name == "min_atol") return m.min_atol;
  if (name == "min_rtol") return m.min_rtol;
  if (name == "floor_max_abs") return r.floor_max_abs;
  if (name == "floor_rms") return r.floor_rms;
  if (name == "floor_mean_abs") return r.floor_mean_abs;
  if (name == "bias_slope") return r.bias_slope;
  if (name == "bias_z") return bias_z_of(r).value_or(Metrics::nan);
  if (name == "local_max_abs") return r.local.max_abs;
  if (name == "local_rms") return r.local.rms;
  if (name == "local_noise_max_abs") return r.local.noise_max_abs;
  if (name == "local_noise_rms") return r.local.noise_rms;
  if (name == "local_bias_z") return local_bias_z_of(r).value_or(Metrics::nan);
  if (name == "local_group_z") return local_group_z_of(r).value_or(Metrics::nan);
  if (name == "carried_max_abs") return r.local.carried_max_abs;
  if (name == "carried_rms") return r.local.carried_rms;
  return std::nullopt;
}

namespace {
constexpr std::pair<std::string_view, Predicate::Op> kOps[] = {
    {"<=", Predicate::Op::le}, {">=", Predicate::Op::ge}, {"==", Predicate::Op::eq},
    {"!=", Predicate::Op::ne}, {"<", Predicate::Op::lt},  {">", Predicate::Op::gt}};
}

bool Predicate::holds(const StageResult& r) const {
  const double v = *metric_value(r, metric);
  if (std::isnan(v)) return false;  // a NaN metric never passes, whatever the operator
  switch (op) {
    case Op::le: return v <= value;
    case Op::lt: return v < value;
    case Op::ge: return v >= value;
    case Op::gt: return v > value;
    case Op::eq: return v == value;
    case Op::ne: return v != value;
  }
  return false;
}

std::string Predicate::str() const {
  for (const auto& [s, o] : kOps)
    if (o == op) return fmt::format("{} {} {:g}", metric, s, value);
  return metric;
}

std::vector<Predicate> parse_predicates(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<Predicate> out;
  std::size_t i = 0;
  while (true) {
    if (i + 3 > words.size())
      throw std::invalid_argument(
          fmt::format("'{}': expected `metric op number` (e.g. `max_abs <= 1e-3`)", text));
    Predicate p;
    p.metric = words[i];
    if (!metric_value(StageResult{}, p.metric))
      throw std::invalid_argument(fmt::format("unknown metric '{}'", p.metric));
    bool op_ok = false;
    for (const auto& [s, o] : kOps)
      if (words[i + 1] == s) {
        p.op = o;
        op_ok = true;
      }
    if (!op_ok)
      throw std::invalid_argument(fmt::format("unknown operator '{}' after '{}'", words[i + 1], p.metric));
    try {
      std::size_t used = 0;
      p.value = std::stod(words[i + 2], &used);
      if (used != words[i + 2].size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw std::invalid_argument(
          fmt::format("'{}' is not a number (in '{} {} ...')", words[i + 2], p.metric, words[i + 1]));
    }
    out.push_back(p);
    i += 3;
    if (i == words.size()) break;
    if (words[i] != "and") throw std::invalid_argument(fmt::format("expected 'and', found '{}'", words[i]));
    ++i;
  }
  return out;
}

}  // namespace ds
