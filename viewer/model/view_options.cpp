#include "view_options.h"

#include <fmt/format.h>

#include <charconv>

namespace ds::view {

namespace {

std::optional<int> to_int(const std::string& s) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

}  // namespace

std::optional<ViewSpec> parse_view(const std::string& text, std::string& error) {
  if (text == "overview") return ViewSpec{Tab::overview, {}};
  if (text == "drift") return ViewSpec{Tab::drift, {}};
  if (text == "compare") return ViewSpec{Tab::compare, {}};
  if (text == "launches") return ViewSpec{Tab::launches, {}};
  const auto parts = split(text, ':');
  if (parts[0] != "inspect") {
    error = "unknown view '" + text + "' (overview, drift, compare, launches, inspect:STEP:LAYER:STAGE:MODE)";
    return std::nullopt;
  }
  if (parts.size() != 5) {
    error = "inspect wants inspect:STEP:LAYER:STAGE:MODE, e.g. inspect:0:1:residual_1:chained";
    return std::nullopt;
  }
  const auto step = to_int(parts[1]);
  const auto layer = parts[2] == "model" ? std::optional<int>(-1) : to_int(parts[2]);
  const auto mode = parse_mode(parts[4]);
  if (!step || !layer || !mode || parts[3].empty()) {
    error = "cannot read '" + text + "': STEP and LAYER are integers, MODE is isolated or chained";
    return std::nullopt;
  }
  return ViewSpec{Tab::inspect, InspectTarget{*step, *layer, parts[3], *mode}};
}

std::optional<std::pair<int, int>> parse_size(const std::string& text) {
  const auto parts = split(text, 'x');
  if (parts.size() != 2) return std::nullopt;
  const auto w = to_int(parts[0]), h = to_int(parts[1]);
  if (!w || !h || *w < 320 || *h < 240 || *w > 8192 || *h > 8192) return std::nullopt;
  return std::pair{*w, *h};
}

std::optional<Click> parse_click(const std::string& text) {
  const auto parts = split(text, ',');
  if (parts.size() != 2) return std::nullopt;
  const auto x = to_int(parts[0]), y = to_int(parts[1]);
  if (!x || !y || *x < 0 || *y < 0) return std::nullopt;
  return Click{float(*x), float(*y)};
}

std::optional<MouseAtFrame> scripted_mouse(const std::vector<Click>& clicks, int frame) {
  const int k = frame - 1;
  if (k < 0 || k >= int(clicks.size()) * kFramesPerClick) return std::nullopt;
  const Click& c = clicks[std::size_t(k / kFramesPerClick)];
  return MouseAtFrame{c.x, c.y, k % kFramesPerClick == 1};
}

std::string describe_state(const ViewState& state) {
  static constexpr const char* kTabs[] = {"overview", "drift", "inspect", "compare", "launches"};
  const std::string tab = kTabs[int(state.tab)];
  if (!state.selected) return fmt::format("tab={} selected=none", tab);
  const InspectTarget& t = *state.selected;
  return fmt::format("tab={} selected=step {} layer {} stage {} mode {}", tab, t.step,
                     t.layer < 0 ? std::string("model") : fmt::format("{}", t.layer), t.stage,
                     mode_name(t.mode));
}

}  // namespace ds::view
