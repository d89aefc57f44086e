#include "json_text.h"

#include <fmt/format.h>

namespace ds::trace {

namespace {

// The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when s[i] does not start one.
std::size_t sequence_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Deeper than this a value is written as a string saying so. escaped() and nlohmann's dump()
// recurse once per level, and a trace's JSON is input: a /result whose exit_code was 100000 nested
// arrays overflowed the stack when an error message quoted it (issue 49, item 12).
constexpr int kMaxDepth = 256;

nlohmann::json escaped(const nlohmann::json& j, int depth = 0) {
  if (depth > kMaxDepth && (j.is_array() || j.is_object()))
    return fmt::format("<{} nested deeper than {} levels>", j.type_name(), kMaxDepth);
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    return is_utf8(s) ? j : nlohmann::json(utf8_escaped(s));
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : j) out.push_back(escaped(e, depth + 1));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[utf8_escaped(k)] = escaped(v, depth + 1);
    return out;
  }
  return j;
}

}  // namespace

std::string utf8_escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = sequence_length(s, i);
    if (n == 0) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string json_text(const nlohmann::json& j, int indent) { return escaped(j).dump(indent); }

}  // namespace ds::trace
