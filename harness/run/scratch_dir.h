// A directory a command writes its intermediate files into: the one the user named (kept), or a
// fresh temporary one, removed when the command ends unless asked to keep it.
//
// A temporary directory to be removed is removed however the command ends: at its end, on
// SIGTERM, SIGINT or SIGHUP (a handler ends the command's child processes, then removes it), and,
// after a SIGKILL or the OOM killer, by the next `check` or `verify` (remove_stale_scratch_dirs:
// its name carries the pid of the process that made it, which holds a lock on it while it runs).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ds {

class ScratchDir {
 public:
  // `named` empty: a new directory under the system's temporary one, "<stem>-<pid>-XXXXXX", or
  // "<stem>-XXXXXX" when `keep_temporary` (never taken for a stale one).
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
  int lock_fd_ = -1;  // open, with an flock, while the directory is in use
  int slot_ = -1;     // its place in what the signal handler removes
};

// Removes the temporary directories that earlier driftscope processes were to remove and could
// not (killed by SIGKILL or the OOM killer): those named "driftscope-<stem>-<pid>-XXXXXX" under
// the temporary directory, owned by this user, whose process no longer runs and whose lock
// nobody holds. Each removal is noted on stderr.
void remove_stale_scratch_dirs();

}  // namespace ds
