// How errors become colours. One place so the heatmap, legends and tests agree.
#pragma once

#include <cstdint>

namespace ds::view {

struct Rgba {
  std::uint8_t r = 0, g = 0, b = 0, a = 255;
  // ImGui's packed colour layout (IM_COL32): A in the high byte, R in the low one.
  std::uint32_t packed() const {
    return std::uint32_t(a) << 24 | std::uint32_t(b) << 16 | std::uint32_t(g) << 8 | r;
  }
  static Rgba unpack(std::uint32_t c) {
    return {std::uint8_t(c), std::uint8_t(c >> 8), std::uint8_t(c >> 16), std::uint8_t(c >> 24)};
  }
  bool operator==(const Rgba&) const = default;
};

// The error decades the heatmap spans below the tolerance: 1e-6 of the tolerance is "exact".
inline constexpr double kPassDecades = 6;
// ...and above it: 1000x over the tolerance is as red as it gets.
inline constexpr double kFailDecades = 3;

// `ratio` = error / tolerance (log scale). Below 1 a cool ramp (navy -> teal -> olive),
// from 1 up a hot ramp (orange -> red) so a failure is never mistaken for a pass.
Rgba error_colour(double ratio);
// For compare views: current / baseline error. Blue when better, grey when equal, red when worse
// (log2 scale, saturating at 8x either way). NaN ratios are grey.
Rgba change_colour(double ratio);
Rgba lerp(Rgba a, Rgba b, double t);

inline constexpr Rgba kNanColour{210, 40, 210, 255};         // magenta: NaN/Inf disagreement
inline constexpr Rgba kFailBorder{255, 40, 40, 255};         // outline of cells failing on their own
inline constexpr Rgba kInheritedBorder{150, 200, 255, 255};  // outline of failures fed in by an earlier stage
inline constexpr Rgba kEmptyColour{38, 38, 44, 255};         // no row for this (layer, stage)
inline constexpr Rgba kSkippedColour{70, 70, 78, 255};       // stage skipped by the run
inline constexpr Rgba kFilledColour{112, 112, 150, 255};     // computed by the reference fill, not judged
inline constexpr Rgba kLaunchBarColour{90, 150, 220, 255};   // kernel time of a layer (Launches tab)

}  // namespace ds::view
