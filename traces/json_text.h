// JSON to text for files and traces, never throwing on the text inside it. Model names, file
// paths, GGUF metadata and error messages quoting them may hold bytes that are not UTF-8, which
// nlohmann's dump() throws on; a run must still leave its trace and reports.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ds::trace {

// `s` with every byte that is not part of a well-formed UTF-8 sequence written as the four
// characters \xNN; valid text comes back unchanged.
std::string utf8_escaped(std::string_view s);
// j.dump(indent), with every string (and key) passed through utf8_escaped first; an array or object
// nested deeper than 256 levels is written as a string saying so (dump() recurses per level).
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace ds::trace
