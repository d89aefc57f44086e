// Helpers of the headless screenshot tests: run the real driftscope and driftscope-view under
// xvfb-run, read back the PNG, and pick lines out of --print-state.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "colour_map.h"
#include "heatmap_layout.h"

namespace ds::view::shot {

namespace fs = std::filesystem;

// The exit code of a shell command (-1 when it did not exit).
int run(const std::string& cmd);
// What a command prints on stdout.
std::string output_of(const std::string& cmd);
// "xvfb-run -a -s ... " with a 1600x1000 screen, to prefix a viewer command.
std::string xvfb();
// The temporary directory the screenshot tests write into.
fs::path dir();

struct Png {
  int w = 0, h = 0;
  std::vector<unsigned char> px;
  Rgba at(float x, float y) const;
};
Png load_png(const std::string& path);

// A fresh trace of `driftscope run ARGS` under dir() (its own file per test: ctest runs tests in
// parallel); returns its path.
std::string trace_of(const std::string& name, const std::string& args);
// The mutant run every viewer test starts from: chain-add-idx on qwen2-tiny, both modes.
std::string mutant_trace(const std::string& name);

// The text after "KEY" on the line of --print-state output that starts with it; nullopt if none.
std::optional<std::string> line_after(const std::string& out, const std::string& key);
// "x0,y0,x1,y1" as printed by --print-state.
std::optional<Rect> parse_rect(const std::string& text);

}  // namespace ds::view::shot

#define REQUIRE_XVFB()                                                              \
  if (std::string(DRIFTSCOPE_XVFB_RUN).empty() || !fs::exists(DRIFTSCOPE_XVFB_RUN)) \
  GTEST_SKIP() << "xvfb-run not found: install xvfb to test the viewer's rendering"
