#include "closest_name.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace ds {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swap of two neighbouring letters ("atnn") is one typo, not two.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> closest_name(std::string_view typed, std::span<const std::string> known) {
  if (std::find(known.begin(), known.end(), typed) != known.end()) return std::nullopt;
  const std::size_t allowed = std::max<std::size_t>(1, typed.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& k : known) {
    const std::size_t dist = edit_distance(typed, k);
    if (dist < best_distance) {
      best_distance = dist;
      best = k;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view typed, std::span<const std::string> known) {
  const auto best = closest_name(typed, known);
  return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

}  // namespace ds
