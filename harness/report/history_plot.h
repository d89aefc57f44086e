// `history plot`: the trends of `history show` drawn as an SVG file, one panel per case, a line per
// stage over the nights.
#pragma once

#include <string>

#include "history_trend.h"

namespace ds {

// The panels: per case, the error-to-floor ratio of each stage that failed some night or creeps
// (every stage with `all`) over the nights, on a log scale with the floor (ratio 1) marked; a
// failed night is a red ring on its line, an unfinished one a grey ring, a creeping stage's line
// dashed and its legend entry says so. Nights are the x axis, labelled.
std::string history_svg(const std::string& db, const HistoryView& view, bool all);

}  // namespace ds
