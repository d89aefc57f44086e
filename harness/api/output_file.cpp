#include "output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ds {

namespace {

namespace fs = std::filesystem;

// All of `bytes` into `fd`; errno is kept from the failing call.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(std::size_t(n));
  }
  return true;
}

// Opens `path` with `flags`, writes `bytes` and closes it: why that failed, or nothing. `opened`
// says whether the file was opened (and so may hold a part of `bytes`).
std::optional<std::string> write_fd(const std::string& path, int flags, std::string_view bytes,
                                    bool& opened) {
  const int fd = ::open(path.c_str(), flags | O_WRONLY | O_CLOEXEC, 0666);
  opened = fd >= 0;
  if (!opened) return std::string(std::strerror(errno));
  const bool wrote = write_all(fd, bytes);
  const int write_errno = wrote ? 0 : (errno ? errno : EIO);
  const bool closed = ::close(fd) == 0;
  if (!wrote) return std::string(std::strerror(write_errno));
  if (!closed) return std::string(std::strerror(errno));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> write_whole_file(const std::string& path, std::string_view bytes) {
  std::error_code ec;
  bool opened = false;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) return write_fd(path, O_TRUNC, bytes, opened);
  // A symbolic link stays one: the file it points at is what is replaced.
  fs::path target(path);
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    if (const fs::path resolved = fs::weakly_canonical(path, ec); !ec) target = resolved;
  static std::atomic<unsigned> counter{0};
  const fs::path temp = target.parent_path() / fmt::format(".{}.tmp-{}-{}", target.filename().string(),
                                                           ::getpid(), counter.fetch_add(1));
  std::optional<std::string> why = write_fd(temp.string(), O_CREAT | O_EXCL, bytes, opened);
  if (!opened) {
    // No file can be made beside it: PATH itself, removed again when the write fails.
    why = write_fd(path, O_CREAT | O_TRUNC, bytes, opened);
    if (why && opened) ::unlink(path.c_str());
    return why;
  }
  if (!why && std::rename(temp.c_str(), target.c_str()) != 0) why = std::string(std::strerror(errno));
  if (why) ::unlink(temp.c_str());
  return why;
}

}  // namespace ds
