// Text made safe for the report formats: XML attribute/element text, Markdown table cells.
#pragma once

#include <string>
#include <string_view>

namespace ds {

// Escapes XML's special characters; bytes that are not UTF-8 become \xNN text and control
// characters XML 1.0 forbids are dropped.
std::string xml_escape(std::string_view raw);

// One Markdown table cell: `|` escaped as `\|` (a bare one would split the row) and a backslash
// before it kept literal, line breaks as <br> (a raw one would end the table). Nothing is dropped.
std::string markdown_cell(std::string_view raw);

}  // namespace ds
