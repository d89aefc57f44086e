#include "user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace ds {

namespace {

std::optional<std::string> kind_problem(const std::string& path, mode_t mode) {
  if (S_ISREG(mode)) return std::nullopt;
  std::string_view kind = "is not a regular file";
  if (S_ISFIFO(mode))
    kind = "is a FIFO";
  else if (S_ISDIR(mode))
    kind = "is a directory";
  else if (S_ISCHR(mode))
    kind = "is a character device";
  else if (S_ISBLK(mode))
    kind = "is a block device";
  else if (S_ISSOCK(mode))
    kind = "is a socket";
  else
    return fmt::format("{}: {}", path, kind);
  return fmt::format("{}: {}, not a regular file", path, kind);
}

std::string bound_text(std::uint64_t bytes) {
  if (bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

std::string too_large(const std::string& path, std::uint64_t size, std::uint64_t max_bytes,
                      std::string_view what) {
  return fmt::format("{}: {} bytes, more than the {} a {} may hold", path, size, bound_text(max_bytes), what);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> special_file_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return kind_problem(path, st.st_mode);
}

std::optional<std::string> read_user_text(const std::string& path, std::uint64_t max_bytes,
                                          std::string_view what, std::string& text) {
  // stat first: opening some devices has effects of its own, and nothing else needs opening.
  if (auto why = special_file_problem(path)) return why;
  // O_NONBLOCK: the path may have become a FIFO since the stat, and then open must not wait.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno));
  if (auto why = kind_problem(path, st.st_mode)) return why;
  if (std::uint64_t(st.st_size) > max_bytes)
    return too_large(path, std::uint64_t(st.st_size), max_bytes, what);
  // Read to the end rather than to st_size: a file that grows meanwhile still meets the bound.
  text.clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno));
    if (n == 0) break;
    if (text.size() + std::size_t(n) > max_bytes)
      return too_large(path, text.size() + std::size_t(n), max_bytes, what);
    text.append(buf, std::size_t(n));
  }
  return std::nullopt;
}

}  // namespace ds
