#include "colour_map.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ds::view {

namespace {

template <std::size_t N>
Rgba ramp(const std::array<Rgba, N>& stops, double t) {
  t = std::clamp(t, 0.0, 1.0) * double(N - 1);
  const std::size_t i = std::min(std::size_t(t), N - 2);
  return lerp(stops[i], stops[i + 1], t - double(i));
}

constexpr std::array<Rgba, 4> kCool = {Rgba{22, 28, 70}, Rgba{28, 92, 140}, Rgba{40, 150, 130},
                                       Rgba{150, 190, 80}};
constexpr std::array<Rgba, 3> kHot = {Rgba{245, 150, 40}, Rgba{235, 70, 30}, Rgba{190, 0, 20}};

}  // namespace

Rgba lerp(Rgba a, Rgba b, double t) {
  auto mix = [t](std::uint8_t x, std::uint8_t y) { return std::uint8_t(std::lround(x + (y - x) * t)); };
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b), mix(a.a, b.a)};
}

Rgba error_colour(double ratio) {
  if (std::isnan(ratio)) return kNanColour;
  if (ratio < 1) {
    const double t = ratio > 0 ? 1 + std::log10(ratio) / kPassDecades : 0;
    return ramp(kCool, t);
  }
  return ramp(kHot, std::log10(ratio) / kFailDecades);
}

Rgba change_colour(double ratio) {
  constexpr Rgba better{40, 110, 220}, same{90, 90, 96}, worse{225, 50, 40};
  if (!(ratio > 0) || !std::isfinite(ratio)) return same;
  const double t = std::clamp(std::log2(ratio) / 3, -1.0, 1.0);
  return t < 0 ? lerp(same, better, -t) : lerp(same, worse, t);
}

}  // namespace ds::view
