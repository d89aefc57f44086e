// `history show`'s output: the console table (with a sparkline per stage) and its JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "history_trend.h"

namespace ds {

// Per case: its outcome night by night and the first night it failed, then one line per stage
// that failed some night or creeps (every stage with `all`), each with its ratio over the nights.
void print_history(std::FILE* out, const std::string& db, const HistoryView& view, bool all);

nlohmann::json history_json(const std::string& db, const HistoryView& view);

// A sparkline of the values, one block character per night, on a log scale between the smallest
// and the largest value (ratios span orders of magnitude); a space where there is no value.
std::string sparkline(const std::vector<std::optional<double>>& values);

}  // namespace ds
