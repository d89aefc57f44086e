#include "scratch_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <regex>

#include "lifeline.h"
#include "runner.h"

namespace ds {

namespace fs = std::filesystem;

namespace {

// The directories to remove if a signal ends the process: a fixed table, read by the handler.
struct Slot {
  std::atomic<bool> used{false};
  char path[4096] = {};
};
std::array<Slot, 8> g_slots;
std::atomic<pid_t> g_owner{0};  // the process that registered them (a forked child inherits the handler)

// The kernel's record of getdents64.
struct DirEntry64 {
  std::uint64_t ino;
  std::int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// Empties the directory open at `fd`, async-signal-safely (no allocation, no stdio).
void empty_dir_now(int fd, int depth) {
  alignas(DirEntry64) char buf[2048];
  for (bool removed = true; removed;) {  // entries removed while listing: list again
    removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (long n; (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
      for (long at = 0; at < n;) {
        const auto* e = reinterpret_cast<const DirEntry64*>(buf + at);
        at += e->reclen;
        if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
        if (::unlinkat(fd, e->name, 0) == 0) {
          removed = true;
          continue;
        }
        if (depth >= 64) continue;
        const int sub = ::openat(fd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        empty_dir_now(sub, depth + 1);
        ::close(sub);
        if (::unlinkat(fd, e->name, AT_REMOVEDIR) == 0) removed = true;
      }
    }
  }
}

void on_ending_signal(int sig) {
  if (::getpid() == g_owner.load()) {
    // What writes into the directories ends first (a build would go on creating files in them).
    lifeline::end_all_now();
    for (Slot& s : g_slots) {
      if (!s.used.load(std::memory_order_acquire)) continue;
      const int fd = ::open(s.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        empty_dir_now(fd, 0);
        ::close(fd);
      }
      ::rmdir(s.path);
    }
  }
  // Dies of the signal, as it would have without the handler (it is delivered on return).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Once per process: a handler for the ending signals that are not ignored (`nohup`, a shell's
// background job ignore some, which stays so).
void install_handler() {
  static const bool installed = [] {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = on_ending_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)installed;
}

int register_for_signals(const fs::path& path) {
  const std::string p = path.string();
  if (p.size() >= sizeof(Slot::path)) return -1;
  g_owner.store(::getpid());
  install_handler();
  for (std::size_t i = 0; i < g_slots.size(); ++i) {
    Slot& s = g_slots[i];
    if (s.used.load()) continue;
    std::memcpy(s.path, p.c_str(), p.size() + 1);
    s.used.store(true, std::memory_order_release);
    return int(i);
  }
  return -1;  // removed at the end and by the next start, not by the handler
}

}  // namespace

ScratchDir::ScratchDir(const std::string& named, std::string_view stem, bool keep_temporary) {
  if (!named.empty()) {
    path_ = named;
    std::error_code ec;
    fs::create_directories(path_, ec);
    if (ec) throw InputError(fmt::format("{}: cannot create the directory: {}", named, ec.message()));
    return;
  }
  const std::string name =
      keep_temporary ? fmt::format("{}-XXXXXX", stem) : fmt::format("{}-{}-XXXXXX", stem, ::getpid());
  std::string templ = (fs::temp_directory_path() / name).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw InputError(fmt::format("cannot make a temporary directory {}: {}", templ, std::strerror(errno)));
  path_ = templ;
  remove_ = !keep_temporary;
  if (!remove_) return;
  lock_fd_ = ::open(templ.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  slot_ = register_for_signals(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (remove_) fs::remove_all(path_, ec);
  if (slot_ >= 0) g_slots[std::size_t(slot_)].used.store(false, std::memory_order_release);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void remove_stale_scratch_dirs() {
  static const std::regex stale_name(R"(driftscope-[a-z-]+-([0-9]+)-[A-Za-z0-9]{6})");
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, stale_name)) continue;
    const long pid = std::strtol(m[1].str().c_str(), nullptr, 10);
    // Its process runs (EPERM: another user's does).
    if (pid <= 0 || pid == ::getpid() || ::kill(pid_t(pid), 0) == 0 || errno == EPERM) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // Ours, and not locked: no process holds it (one in another PID namespace sharing this
    // directory may have the same pid number as one that ended here).
    if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code removed;
      fs::remove_all(it->path(), removed);
      if (!removed)
        fmt::print(stderr,
                   "note: removed {}, left by driftscope process {}, which was killed before it could\n",
                   it->path().string(), pid);
    }
    ::close(fd);
  }
}

}  // namespace ds
