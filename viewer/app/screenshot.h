// Saves the current back buffer as a PNG (headless mode).
#pragma once

#include <string>

namespace ds::view {

// Reads width x height pixels of the back buffer (call after rendering, before swapping) and
// writes them top row first. Returns "" or what went wrong.
std::string write_screenshot(const std::string& path, int width, int height);

}  // namespace ds::view
