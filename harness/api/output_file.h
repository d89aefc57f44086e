// Files a command writes for the user (a report, a verdict, an exported tensor): whole or not at
// all. A write that fails half way (a full disk, `ulimit -f`) must not leave a truncated JSON that
// a CI step then parses as the verdict, nor destroy the previous good file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ds {

// Writes `bytes` to PATH through a temporary file beside it, renamed over PATH once complete; a
// failure removes the temporary file and leaves PATH as it was. A PATH that is not a regular file
// (/dev/stdout, a FIFO) is written in place; where no temporary file can be made beside PATH (a
// directory the user may not write), PATH itself is written and removed when that fails. Returns
// why it failed ("File too large"), or nothing when PATH holds `bytes`.
std::optional<std::string> write_whole_file(const std::string& path, std::string_view bytes);

}  // namespace ds
