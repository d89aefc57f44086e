#include "install_paths.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "runner.h"

namespace ds::cli {

namespace fs = std::filesystem;

std::optional<fs::path> install_prefix() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path bin = exe.parent_path();
  if (bin.filename() != fs::path(DRIFTSCOPE_INSTALL_BINDIR).filename()) return std::nullopt;
  const fs::path prefix = bin.parent_path();
  if (!fs::exists(prefix / DRIFTSCOPE_INSTALL_CMAKEDIR / "driftscopeConfig.cmake", ec)) return std::nullopt;
  return prefix;
}

namespace {

fs::path shipped_dir(std::string_view kind) {
  if (const auto prefix = install_prefix()) return *prefix / DRIFTSCOPE_INSTALL_DATADIR / "driftscope" / kind;
  return fs::path(DRIFTSCOPE_SOURCE_DIR) / "fixtures" / kind;
}

std::vector<std::string> shipped_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

fs::path python_sdk_dir() {
  if (const auto prefix = install_prefix())
    return *prefix / DRIFTSCOPE_INSTALL_DATADIR / "driftscope" / "python";
  return fs::path(DRIFTSCOPE_SOURCE_DIR) / "python";
}

std::string find_shipped_yaml(std::string_view kind, const std::string& arg, std::string_view option) {
  std::error_code ec;
  // Anything there (a FIFO, a directory too) and any path is the reader's to judge and name.
  if (arg.empty() || fs::exists(fs::symlink_status(arg, ec)) || arg.find('/') != std::string::npos)
    return arg;
  const fs::path dir = shipped_dir(kind);
  for (const fs::path& candidate : {dir / arg, dir / (arg + ".yaml")})
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  const std::vector<std::string> names = shipped_names(dir);
  throw InputError(
      fmt::format("{} {}: no such file, and no shipped file of that name; the shipped {} ({}) are: {}",
                  option, arg, kind, dir.string(),
                  names.empty() ? "none (the directory is missing or empty)"
                                : fmt::format("{}", fmt::join(names, ", "))));
}

}  // namespace ds::cli
