// The readers under fuzz take paths (they map or open files), so each input is written to a file
// first: one private directory per process, reused by every input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds::fuzz {

// The process's scratch directory (created on first use, removed at exit).
const std::string& scratch_dir();
// Writes `bytes` to `name` in the scratch directory, replacing it; returns its path.
std::string write_scratch(std::string_view name, std::string_view bytes);
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace ds::fuzz
