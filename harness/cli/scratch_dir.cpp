#include "scratch_dir.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "runner.h"

namespace ds::cli {

ScratchDir::ScratchDir(const std::string& named, std::string_view stem, bool keep_temporary) {
  namespace fs = std::filesystem;
  if (!named.empty()) {
    path_ = named;
    std::error_code ec;
    fs::create_directories(path_, ec);
    if (ec) throw InputError(fmt::format("{}: cannot create the directory: {}", named, ec.message()));
    return;
  }
  std::string templ = (fs::temp_directory_path() / fmt::format("{}-XXXXXX", stem)).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw InputError(fmt::format("cannot make a temporary directory {}: {}", templ, std::strerror(errno)));
  path_ = templ;
  remove_ = !keep_temporary;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (remove_) std::filesystem::remove_all(path_, ec);
}

}  // namespace ds::cli
