#include "matrix.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <string_view>

#include "trace_cases.h"

namespace ds {

namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                        "-_./:=,+@%") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ShardSpec::str() const { return fmt::format("{}/{}", index, count); }

std::optional<ShardSpec> parse_shard(const std::string& spec, std::string& error) {
  const auto slash = spec.find('/');
  ShardSpec s;
  if (slash == std::string::npos || !parse_int(std::string_view(spec).substr(0, slash), s.index) ||
      !parse_int(std::string_view(spec).substr(slash + 1), s.count)) {
    error = fmt::format("--shard {}: expected i/N (0-based shard i of N, e.g. 0/4)", spec);
    return std::nullopt;
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count) {
    error = fmt::format("--shard {}: need N >= 1 and 0 <= i < N (shards are numbered from 0)", spec);
    return std::nullopt;
  }
  return s;
}

std::string CaseSpec::key() const { return trace::case_key(model, candidate, seed, probe); }

std::vector<CaseSpec> enumerate_cases(const std::vector<std::string>& models,
                                      const std::vector<std::string>& candidates,
                                      const std::vector<std::uint64_t>& seeds,
                                      const std::vector<std::string>& probes) {
  std::vector<CaseSpec> out;
  const int total = int(models.size() * candidates.size() * seeds.size() * probes.size());
  for (const auto& m : models)
    for (const auto& c : candidates)
      for (std::uint64_t s : seeds)
        for (const auto& p : probes) out.push_back({int(out.size()), total, m, c, s, p});
  return out;
}

std::vector<CaseSpec> select_shard(const std::vector<CaseSpec>& cases, const ShardSpec& s) {
  std::vector<CaseSpec> out;
  for (const auto& c : cases)
    if (c.index % s.count == s.index) out.push_back(c);
  return out;
}

std::string case_trace_name(const CaseSpec& c) { return fmt::format("case-{}-of-{}.h5", c.index, c.of); }

std::string single_case_command(const std::vector<std::string>& argv, const CaseSpec& c) {
  // Flags that describe the matrix or name its outputs; each takes one value.
  static constexpr std::array<std::string_view, 12> kDropped = {
      "--model", "-m",          "--candidate", "-c", "--seed", "--shard",
      "--probe", "--trace-dir", "--trace",     "-o", "--json", "--junit"};
  auto dropped = [](std::string_view a) {
    if (a == "--markdown") return true;
    for (auto d : kDropped)
      if (a == d) return true;
    return false;
  };
  std::string out = argv.empty() ? "driftscope" : shell_quote(argv[0]);
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos && dropped(std::string_view(a).substr(0, eq)))
      continue;
    if (dropped(a)) {
      ++i;  // and its value
      continue;
    }
    out += " " + shell_quote(a);
  }
  out += fmt::format(" --model {} --candidate {} --seed {}", shell_quote(c.model), shell_quote(c.candidate),
                     c.seed);
  return c.probe.empty() ? out : out + fmt::format(" --probe {}", shell_quote(c.probe));
}

}  // namespace ds
