#include "screenshot_util.h"

#include <fmt/format.h>

#include <stb/stb_image.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace ds::view::shot {

int run(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string output_of(const std::string& cmd) {
  std::string out;
  if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  return out;
}

std::string xvfb() { return fmt::format("{} -a -s \"-screen 0 1600x1000x24\" ", DRIFTSCOPE_XVFB_RUN); }

fs::path dir() {
  const fs::path d = fs::temp_directory_path() / "driftscope_viewer_shot";
  fs::create_directories(d);
  return d;
}

Rgba Png::at(float x, float y) const {
  const std::size_t i = (std::size_t(y) * std::size_t(w) + std::size_t(x)) * 3;
  return {px[i], px[i + 1], px[i + 2], 255};
}

Png load_png(const std::string& path) {
  Png p;
  int n = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.w, &p.h, &n, 3);
  if (data) p.px.assign(data, data + std::size_t(p.w) * std::size_t(p.h) * 3);
  stbi_image_free(data);
  return p;
}

std::string trace_of(const std::string& name, const std::string& args) {
  const std::string trace = (dir() / name).string();
  fs::remove(trace);
  run(std::string(DRIFTSCOPE_EXE) + " run " + args + " --trace " + trace + " > /dev/null 2>&1");
  return trace;
}

std::string mutant_trace(const std::string& name) {
  return trace_of(name, "--model synthetic:qwen2-tiny --candidate mutant:chain-add-idx --mode both");
}

std::optional<std::string> line_after(const std::string& out, const std::string& key) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  return std::nullopt;
}

std::optional<Rect> parse_rect(const std::string& text) {
  Rect r;
  if (std::sscanf(text.c_str(), "%f,%f,%f,%f", &r.x0, &r.y0, &r.x1, &r.y1) != 4) return std::nullopt;
  return r;
}

}  // namespace ds::view::shot
