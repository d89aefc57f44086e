#include "simt_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <thread>

namespace ds {

std::string parse_simt_order(std::string_view text, SimtOptions& o) {
  if (text == "forward" || text == "reverse") {
    o.order = text == "forward" ? SimtOptions::Order::forward : SimtOptions::Order::reverse;
    o.seed = 0;
    return {};
  }
  if (text.rfind("random", 0) != 0 || (text.size() > 6 && text[6] != ':'))
    return fmt::format("'{}' is not forward, reverse, random or random:SEED", text);
  std::uint64_t seed = 0;
  if (text.size() > 6) {
    const std::string_view digits = text.substr(7);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      return fmt::format("'{}': the seed must be a number from 0 to 2^64 - 1", text);
  }
  o.order = SimtOptions::Order::random;
  o.seed = seed;
  return {};
}

std::string simt_order_text(const SimtOptions& o) {
  switch (o.order) {
    case SimtOptions::Order::forward: return "forward";
    case SimtOptions::Order::reverse: return "reverse";
    case SimtOptions::Order::random: return fmt::format("random:{}", o.seed);
  }
  return "?";
}

unsigned simt_threads(const SimtOptions& o) {
  return o.threads != 0 ? o.threads : std::max(std::thread::hardware_concurrency(), 1u);
}

}  // namespace ds
