// "Did you mean": the known name a mistyped one most likely stands for, for the errors of every
// option and file field that takes a name (candidates, stages, probes, policy rules).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ds {

// Edits (insert, delete, substitute, swap two neighbours) turning `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The known name closest to `typed`, when it is close enough to be a typo (at most a third of the
// typed name's characters changed, and at least one); nullopt otherwise or when `typed` is known.
std::optional<std::string> closest_name(std::string_view typed, std::span<const std::string> known);
// "; did you mean 'simt'?" or empty: the tail an error message appends.
std::string did_you_mean(std::string_view typed, std::span<const std::string> known);

}  // namespace ds
