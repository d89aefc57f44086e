#include "progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ds {

std::string clock_text(double seconds) {
  const auto s = std::int64_t(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string progress_line(int done, int total, double elapsed_s, double eta_after_s) {
  constexpr int kWidth = 30;
  const int clamped = std::clamp(done, 0, std::max(total, 0));
  const int filled = kWidth * clamped / std::max(total, 1);
  std::string line = fmt::format("[{}{}] {}/{} layers", std::string(std::size_t(filled), '#'),
                                 std::string(std::size_t(kWidth - filled), ' '), done, total);
  // Before a couple of seconds have passed the rate is noise (and short runs need no clock).
  if (elapsed_s < eta_after_s) return line;
  line += fmt::format("  {} elapsed", clock_text(elapsed_s));
  if (clamped > 0 && clamped < total)
    line += fmt::format(", ~{} left", clock_text(elapsed_s * double(total - clamped) / double(clamped)));
  return line;
}

}  // namespace ds
