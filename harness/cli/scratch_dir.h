// A directory a command writes its intermediate files into: the one the user named (kept), or a
// fresh temporary one, removed when the command ends unless asked to keep it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ds::cli {

class ScratchDir {
 public:
  // `named` empty: a new directory under the system's temporary one, "<stem>-XXXXXX".
  ScratchDir(const std::string& named, std::string_view stem, bool keep_temporary = false);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  bool kept() const { return !remove_; }

 private:
  std::filesystem::path path_;
  bool remove_ = false;
};

}  // namespace ds::cli
