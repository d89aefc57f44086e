// C++ identifiers in user text (a stage map's `entry`, the lines of a .cu), found by a plain scan.
// std::regex matches by recursion, one frame per character or repeat: an `entry` of 30,000
// characters, or a .cu line as long, overflowed the stack (issue 49, item 12).
#pragma once

#include <cstddef>
#include <string_view>

namespace ds::cli {

// The longest function name a stage map's `entry` may give: far past any real one, and short
// enough that every message quoting it stays one line.
inline constexpr std::size_t kMaxEntryChars = 256;

inline bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// An unqualified C++ identifier: a letter or underscore, then letters, digits or underscores.
inline bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!is_identifier_char(c)) return false;
  return true;
}

// Whether `line` calls or declares `name`: the whole word `name`, then blanks, then '('.
inline bool names_a_call(std::string_view line, std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t at = line.find(name); at != std::string_view::npos; at = line.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if ((at > 0 && is_identifier_char(line[at - 1])) || (end < line.size() && is_identifier_char(line[end])))
      continue;
    const std::size_t next = line.find_first_not_of(" \t\r\f\v", end);
    if (next != std::string_view::npos && line[next] == '(') return true;
  }
  return false;
}

}  // namespace ds::cli
