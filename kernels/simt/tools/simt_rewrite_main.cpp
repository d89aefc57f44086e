// driftscope-simt-rewrite [--access-hooks] IN.cu OUT.cpp: the build step of driftscope_add_simt_kernel() that
// turns a .cu written for nvcc into the C++ the SIMT CPU runtime compiles (cuda_rewrite.h). IN.cu is only
// read; OUT.cpp is replaced only when its content changes, so an unchanged kernel does not rebuild.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

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

}  // namespace

int main(int argc, char** argv) {
  // --access-hooks: the source of the checked flavour (cuda_rewrite.h's Input::access_hooks).
  const bool access_hooks = argc == 4 && std::string(argv[1]) == "--access-hooks";
  if (argc != 3 && !access_hooks) {
    fmt::print(stderr, "usage: driftscope-simt-rewrite [--access-hooks] IN.cu OUT.cpp\n");
    return 2;
  }
  std::error_code ec;
  const fs::path in = fs::absolute(argv[argc - 2], ec).lexically_normal();
  const fs::path out = argv[argc - 1];
  std::string source;
  if (ec || !fs::is_regular_file(in, ec) || !read_file(in, source)) {
    fmt::print(stderr, "driftscope-simt-rewrite: cannot read {}: not a readable file\n", in.string());
    return 2;
  }
  const std::string text = simt::rewrite::rewrite_cuda_source({source, in.string(),
                                                               [](const std::string& p) {
                                                                 std::error_code e;
                                                                 return fs::is_regular_file(p, e);
                                                               },
                                                               access_hooks});
  std::string old;
  if (read_file(out, old) && old == text) return 0;
  fs::create_directories(out.parent_path().empty() ? fs::path(".") : out.parent_path(), ec);
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
