#include "report_text.h"

#include "json_text.h"

namespace ds {

std::string xml_escape(std::string_view raw) {
  // XML must be well-formed UTF-8: bytes that are not become \xNN text first.
  const std::string s = trace::utf8_escaped(raw);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even escaped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::string markdown_cell(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '|') {
      out += "\\|";
    } else if (c == '\\' && i + 1 < raw.size() && raw[i + 1] == '|') {
      // GitHub reads "\|" as an escaped pipe: a literal backslash before one needs its own escape.
      out += "\\\\";
    } else if (c == '\r') {
      if (i + 1 < raw.size() && raw[i + 1] == '\n') continue;
      out += "<br>";
    } else if (c == '\n') {
      out += "<br>";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ds
