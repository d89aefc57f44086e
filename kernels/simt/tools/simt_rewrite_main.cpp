// driftscope-simt-rewrite [--access-hooks] [--depfile OUT.d] IN.cu OUT.cpp: the build step of
// driftscope_add_simt_kernel() that turns a .cu written for nvcc into the C++ the SIMT CPU runtime
// compiles (cuda_rewrite.h). IN.cu is only read; OUT.cpp is replaced only when its content changes, so
// an unchanged kernel does not rebuild. OUT.d (a Makefile rule) lists the files rewritten into OUT.cpp
// besides IN.cu, so that an edit to an included .cu reruns the step.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "cuda_rewrite.h"

namespace fs = std::filesystem;

namespace {

bool read_file(const fs::path& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return static_cast<bool>(f) || f.eof();
}

// A path as a Makefile rule writes it (GNU make and Ninja read `\ ` as a space).
std::string make_escaped(const std::string& path) {
  std::string out;
  for (const char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

bool write_depfile(const fs::path& depfile, const fs::path& out, const fs::path& in,
                   const std::vector<std::string>& inlined) {
  std::string rule = make_escaped(out.string()) + ":";
  rule += " \\\n  " + make_escaped(in.string());
  for (const std::string& p : inlined) rule += " \\\n  " + make_escaped(p);
  rule += "\n";
  std::ofstream f(depfile, std::ios::binary | std::ios::trunc);
  f << rule;
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  // --access-hooks: the source of the checked flavour (cuda_rewrite.h's Input::access_hooks).
  bool access_hooks = false;
  fs::path depfile;
  int arg = 1;
  for (; arg < argc && std::string(argv[arg]).starts_with("--"); ++arg) {
    const std::string flag = argv[arg];
    if (flag == "--access-hooks") {
      access_hooks = true;
    } else if (flag == "--depfile" && arg + 1 < argc) {
      depfile = argv[++arg];
    } else {
      arg = argc;  // usage
    }
  }
  if (argc - arg != 2) {
    fmt::print(stderr, "usage: driftscope-simt-rewrite [--access-hooks] [--depfile OUT.d] IN.cu OUT.cpp\n");
    return 2;
  }
  std::error_code ec;
  const fs::path in = fs::absolute(argv[arg], ec).lexically_normal();
  const fs::path out = argv[arg + 1];
  std::string source;
  if (ec || !fs::is_regular_file(in, ec) || !read_file(in, source)) {
    fmt::print(stderr, "driftscope-simt-rewrite: cannot read {}: not a readable file\n", in.string());
    return 2;
  }
  std::vector<std::string> inlined;
  const std::string text =
      simt::rewrite::rewrite_cuda_source({source, in.string(),
                                          [](const std::string& p) {
                                            std::error_code e;
                                            return fs::is_regular_file(p, e);
                                          },
                                          access_hooks,
                                          [](const std::string& p) -> std::optional<std::string> {
                                            std::string t;
                                            if (!read_file(p, t)) return std::nullopt;
                                            return t;
                                          }},
                                         &inlined);
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path(), ec);
  if (!depfile.empty() && !write_depfile(depfile, out, in, inlined)) {
    fmt::print(stderr, "driftscope-simt-rewrite: cannot write {}\n", depfile.string());
    return 2;
  }
  std::string old;
  if (read_file(out, old) && old == text) return 0;
  const fs::path tmp = out.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) {
      fmt::print(stderr, "driftscope-simt-rewrite: cannot write {}\n", tmp.string());
      return 2;
    }
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    fmt::print(stderr, "driftscope-simt-rewrite: cannot replace {}: {}\n", out.string(), ec.message());
    return 2;
  }
  return 0;
}
