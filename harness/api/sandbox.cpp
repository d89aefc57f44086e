#include "sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace ds::sandbox {

namespace {

// What a child tells its parent: the call it was stopped at, and the mechanisms it could not set up.
struct SharedPage {
  std::atomic<int> blocked_nr{-1};
  std::atomic<int> blocked_arg{-1};
  char blocked_path[1024] = {};  // a change refused outside the temp dir: the path it named
  char missing[3000] = {};
};
SharedPage* g_page = nullptr;
std::optional<Options> g_options;

// The exit status of a process stopped at a blocked call (its parent reads the page for which).
constexpr int kBlockedExit = 159;

void note_missing(const std::string& what) {
  if (!g_page) return;
  const std::size_t used = std::strlen(g_page->missing);
  if (used + what.size() + 2 < sizeof g_page->missing) {
    std::memcpy(g_page->missing + used, what.data(), what.size());
    g_page->missing[used + what.size()] = '\n';
  }
}

void record_blocked(int nr, int arg, const std::string& path = {}) {
  if (!g_page) return;
  int none = -1;
  // The first call stopped is the one named; later ones are its consequences.
  if (g_page->blocked_nr.compare_exchange_strong(none, nr)) {
    g_page->blocked_arg.store(arg);
    const std::size_t n = std::min(path.size(), sizeof g_page->blocked_path - 1);
    std::memcpy(g_page->blocked_path, path.data(), n);
    g_page->blocked_path[n] = '\0';
  }
}

void on_sigsys(int, siginfo_t* si, void* context) {
  int arg = -1;
#if defined(__x86_64__)
  arg = int(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RDI]);
#else
  (void)context;
#endif
  record_blocked(si->si_syscall, arg);
  static const char msg[] =
      "driftscope sandbox: stopped a system call the sandbox forbids (exec, or a socket other than "
      "AF_UNIX)\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(kBlockedExit);
}

void set_rlimits() {
  const struct {
    int resource;
    rlim_t limit;
  } limits[] = {{RLIMIT_CORE, 0}, {RLIMIT_FSIZE, rlim_t(1) << 30}, {RLIMIT_NPROC, 512}};
  for (const auto& l : limits) {
    rlimit r{};
    if (::getrlimit(l.resource, &r) != 0) continue;
    const rlim_t want = std::min(l.limit, r.rlim_max);
    r.rlim_cur = want;
    r.rlim_max = want;
    if (::setrlimit(l.resource, &r) != 0)
      note_missing(fmt::format("rlimit {}: {}", l.resource, std::strerror(errno)));
  }
}

// The kernel's landlock_ruleset_attr as of ABI 4 (handled_access_net); older ABIs read the first
// field only. Debian 12's headers predate the fields after handled_access_fs and the rights below.
struct RulesetAttr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;
};
constexpr std::uint64_t kFsTruncate = std::uint64_t(1) << 14;  // ABI 3
constexpr std::uint64_t kNetBindTcp = std::uint64_t(1) << 0;   // ABI 4
constexpr std::uint64_t kNetConnectTcp = std::uint64_t(1) << 1;

int landlock_abi() {
  return int(::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION));
}

void restrict_writes(const std::string& dir) {
  const int abi = landlock_abi();
  if (abi < 1) {
    note_missing(
        fmt::format("Landlock: not available here ({}): writes are not confined", std::strerror(errno)));
    return;
  }
  std::uint64_t writes = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                         LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                         LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                         LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) writes |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) writes |= kFsTruncate;
  RulesetAttr attr;
  attr.handled_access_fs = writes;
  if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  const int ruleset = int(::syscall(SYS_landlock_create_ruleset, &attr,
                                    abi >= 4 ? sizeof attr : sizeof attr.handled_access_fs, 0));
  if (ruleset < 0) {
    note_missing(
        fmt::format("Landlock: cannot create a ruleset ({}): writes are not confined", std::strerror(errno)));
    return;
  }
  const struct {
    const char* path;
    std::uint64_t allowed;
  } beneath[] = {{dir.c_str(), writes},
                 {"/dev", LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? kFsTruncate : 0)}};
  for (const auto& b : beneath) {
    const int fd = ::open(b.path, O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    landlock_path_beneath_attr rule{};
    rule.allowed_access = b.allowed;
    rule.parent_fd = fd;
    if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
      note_missing(fmt::format("Landlock: cannot allow writes under {} ({})", b.path, std::strerror(errno)));
    ::close(fd);
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    note_missing(fmt::format("Landlock: cannot restrict the process ({}): writes are not confined",
                             std::strerror(errno)));
  ::close(ruleset);
}

// A seccomp program whose jumps name their targets: "next", "allow", "deny" or a label placed
// with mark(); resolved to relative offsets once every instruction is known.
class Filter {
 public:
  void load(std::uint32_t offset) { code_.push_back({BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset), "", ""}); }
  void if_equal(std::uint32_t k, std::string then, std::string otherwise) {
    code_.push_back({BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0), std::move(then), std::move(otherwise)});
  }
  // Jumps to `then` when any bit of `mask` is set in the loaded word.
  void if_any_bit(std::uint32_t mask, std::string then, std::string otherwise) {
    code_.push_back(
        {BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 0), std::move(then), std::move(otherwise)});
  }
  void mark(const std::string& label) { labels_.emplace_back(label, code_.size()); }
  // `deny`: what a forbidden call gets (SECCOMP_RET_TRAP: stopped and named; SECCOMP_RET_ERRNO: it fails).
  std::vector<sock_filter> program(std::uint32_t deny) const {
    const std::size_t at_allow = code_.size(), at_deny = at_allow + 1;
    auto index_of = [&](const std::string& t, std::size_t i) {
      if (t == "next") return i + 1;
      if (t == "allow") return at_allow;
      if (t == "deny") return at_deny;
      for (const auto& [label, at] : labels_)
        if (label == t) return at;
      return at_deny;  // an unknown label: deny (never reached in the programs below)
    };
    std::vector<sock_filter> out;
    for (std::size_t i = 0; i < code_.size(); ++i) {
      sock_filter f = code_[i].f;
      if (BPF_CLASS(f.code) == BPF_JMP) {
        f.jt = std::uint8_t(index_of(code_[i].then, i) - i - 1);
        f.jf = std::uint8_t(index_of(code_[i].otherwise, i) - i - 1);
      }
      out.push_back(f);
    }
    out.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    out.push_back(BPF_STMT(BPF_RET | BPF_K, deny));
    return out;
  }

 private:
  struct Insn {
    sock_filter f;
    std::string then, otherwise;
  };
  std::vector<Insn> code_;
  std::vector<std::pair<std::string, std::size_t>> labels_;
};

// The stopped caller's memory (the listener is another process): its call's arguments point there.
class CallerMemory {
 public:
  explicit CallerMemory(int pid)
      : fd_(::open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~CallerMemory() {
    if (fd_ >= 0) ::close(fd_);
  }
  CallerMemory(const CallerMemory&) = delete;
  CallerMemory& operator=(const CallerMemory&) = delete;
  // Up to n bytes at `address` into `to`: how many, <= 0 when none could be read.
  ssize_t read(std::uint64_t address, void* to, std::size_t n) const {
    return fd_ < 0 ? -1 : ::pread(fd_, to, n, off_t(address));
  }

 private:
  int fd_;
};

// The path process `pid` asked to open (a string at `address` of its memory), made absolute
// against `dirfd` (AT_FDCWD: its working directory) and with "." and ".." taken out; "" when it
// cannot be read.
std::string opened_path(int pid, int dirfd, std::uint64_t address) {
  const CallerMemory mem(pid);
  std::string path;
  char buf[256];
  for (bool done = false; !done && path.size() < 4096;) {
    const ssize_t n = mem.read(address + path.size(), buf, sizeof buf);
    if (n <= 0) {
      path.clear();
      break;
    }
    const auto* nul = static_cast<const char*>(std::memchr(buf, '\0', std::size_t(n)));
    path.append(buf, nul ? std::size_t(nul - buf) : std::size_t(n));
    done = nul != nullptr;
  }
  if (path.empty()) return "";
  if (path[0] != '/') {
    const std::string link =
        dirfd == AT_FDCWD ? fmt::format("/proc/{}/cwd", pid) : fmt::format("/proc/{}/fd/{}", pid, dirfd);
    char base[4096];
    const ssize_t n = ::readlink(link.c_str(), base, sizeof base - 1);
    if (n <= 0) return "";
    path = std::string(base, std::size_t(n)) + "/" + path;
  }
  std::vector<std::string> parts;
  for (std::size_t at = 0; at <= path.size();) {
    const std::size_t slash = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, slash - at);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = slash + 1;
  }
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

// `dir` with its symlinks resolved, or as given when it cannot be.
std::string resolved_dir(const std::string& dir) {
  char real[PATH_MAX];
  return !dir.empty() && ::realpath(dir.c_str(), real) != nullptr ? std::string(real) : dir;
}

// Whether Landlock lets the sandbox write `path`: under `writable` (resolved_dir's) or /dev (the
// directory holding `path` resolved, so a symlink into either counts as in it).
bool may_write(const std::string& path, const std::string& writable) {
  std::string where = path;
  if (const std::size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    char real[PATH_MAX];
    if (::realpath(path.substr(0, slash).c_str(), real) != nullptr)
      where = std::string(real) + path.substr(slash);
  }
  const auto under = [&](const std::string& d) { return !d.empty() && where.rfind(d + "/", 0) == 0; };
  return under(writable) || under("/dev");
}

#if defined(__x86_64__)
// The calls that create, remove, rename or truncate a path (or open one, openat2, whose flags the
// filter cannot read): each goes to the listener, which names the path when it is outside the temp dir.
constexpr long kPathChanges[] = {__NR_creat,    __NR_mkdir,  __NR_mkdirat,  __NR_rmdir,     __NR_unlink,
                                 __NR_unlinkat, __NR_rename, __NR_renameat, __NR_renameat2, __NR_truncate,
                                 __NR_openat2,  __NR_link,   __NR_linkat,   __NR_symlink,   __NR_symlinkat,
                                 __NR_mknod,    __NR_mknodat};

// openat2's `struct open_how` starts with its u64 flags; 0 when they cannot be read.
std::uint64_t open_how_flags(int pid, std::uint64_t address) {
  std::uint64_t flags = 0;
  if (CallerMemory(pid).read(address, &flags, sizeof flags) != ssize_t(sizeof flags)) flags = 0;
  return flags;
}

// The listener's answer to one call: a path it changes under the temp dir (or /dev) goes on
// (Landlock still decides); one elsewhere is recorded and fails with EACCES, as Landlock fails it;
// an exec or a socket is recorded and fails with EPERM.
void answer(const seccomp_notif& req, const std::string& writable, seccomp_notif_resp& resp) {
  constexpr std::uint64_t kWrites = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
  const int pid = int(req.pid), nr = int(req.data.nr);
  const auto* a = req.data.args;
  // (dirfd, path address) of every path the call changes.
  std::vector<std::pair<int, std::uint64_t>> paths;
  switch (nr) {
    case __NR_open:
    case __NR_creat:
    case __NR_mkdir:
    case __NR_rmdir:
    case __NR_unlink:
    case __NR_truncate: paths = {{AT_FDCWD, a[0]}}; break;
    case __NR_openat:
    case __NR_mkdirat:
    case __NR_unlinkat: paths = {{int(a[0]), a[1]}}; break;
    case __NR_openat2:
      if ((open_how_flags(pid, a[2]) & kWrites) != 0) paths = {{int(a[0]), a[1]}};
      break;
    case __NR_rename: paths = {{AT_FDCWD, a[0]}, {AT_FDCWD, a[1]}}; break;
    // A link's new name is the path it makes; what it points at is not written.
    case __NR_mknod: paths = {{AT_FDCWD, a[0]}}; break;
    case __NR_mknodat: paths = {{int(a[0]), a[1]}}; break;
    case __NR_link:
    case __NR_symlink: paths = {{AT_FDCWD, a[1]}}; break;
    case __NR_linkat: paths = {{int(a[2]), a[3]}}; break;
    case __NR_symlinkat: paths = {{int(a[1]), a[2]}}; break;
    case __NR_renameat:
    case __NR_renameat2: paths = {{int(a[0]), a[1]}, {int(a[2]), a[3]}}; break;
    default:  // exec, socket
      record_blocked(nr, int(a[0]));
      resp.error = -EPERM;
      return;
  }
  for (const auto& [dirfd, address] : paths) {
    const std::string path = opened_path(pid, dirfd, address);
    if (!path.empty() && !may_write(path, writable)) {
      record_blocked(nr, -1, path);
      resp.error = -EACCES;
      return;
    }
  }
  resp.error = 0;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
}
#endif

// No exec (but of `only_exec`, the exact pointer the caller is about to pass to execve, when given;
// every exec when `any_exec`) and no socket but AF_UNIX. A plugin's process is stopped at such a call
// and it is named (SIGSYS, the shared page); a Python candidate's sees it fail with EPERM, which its
// code raises, naming its own line.
void forbid_calls(bool any_exec, const char* only_exec, bool fail_with_errno) {
#if defined(__x86_64__)
  const auto arg0 = std::uint32_t(offsetof(seccomp_data, args[0]));
  const auto pointer = reinterpret_cast<std::uint64_t>(only_exec);
  // `name_writes`: an open for writing goes to the listener too, which names one outside the temp
  // dir (Landlock refuses it either way, but silently).
  const auto build = [&](bool name_writes) {
    Filter f;
    f.load(offsetof(seccomp_data, arch));
    f.if_equal(AUDIT_ARCH_X86_64, "next", "deny");  // x32 or i386 calls: refused whole
    f.load(offsetof(seccomp_data, nr));
    if (!any_exec) {
      f.if_equal(__NR_execve, only_exec ? "exec" : "deny", "next");
      f.if_equal(__NR_execveat, "deny", "next");
    }
    if (name_writes) {
      f.if_equal(__NR_open, "open", "next");
      f.if_equal(__NR_openat, "openat", "next");
      for (const long nr : kPathChanges) f.if_equal(std::uint32_t(nr), "deny", "next");
    }
    f.if_equal(__NR_socket, "socket", "allow");
    f.mark("socket");
    f.load(arg0);
    f.if_equal(AF_UNIX, "allow", "deny");
    if (only_exec && !any_exec) {
      f.mark("exec");
      f.load(arg0);  // the low word (x86_64 is little-endian), then the high one
      f.if_equal(std::uint32_t(pointer), "next", "deny");
      f.load(arg0 + 4);
      f.if_equal(std::uint32_t(pointer >> 32), "allow", "deny");
    }
    if (name_writes) {
      constexpr std::uint32_t kWrites = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
      f.mark("open");
      f.load(std::uint32_t(offsetof(seccomp_data, args[1])));
      f.if_any_bit(kWrites, "deny", "allow");
      f.mark("openat");
      f.load(std::uint32_t(offsetof(seccomp_data, args[2])));
      f.if_any_bit(kWrites, "deny", "allow");
    }
    return f;
  };
  Filter f = build(false);
  if (fail_with_errno) {
    std::vector<sock_filter> code = f.program(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
    sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      note_missing(fmt::format("seccomp: cannot install the filter ({}): exec and sockets are not blocked",
                               std::strerror(errno)));
    return;
  }
  // Every forbidden call, from this process or any it forks (system() runs its shell from a child
  // whose signal handlers glibc resets, so a SIGSYS handler would never hear of it), is handed to a
  // thread of this process, which records it on the shared page and fails it with EPERM.
  // An open for writing is handed over too: one under the temp dir goes on, one elsewhere is
  // recorded with its path and fails with EACCES, as Landlock fails it.
  std::vector<sock_filter> code = build(true).program(SECCOMP_RET_USER_NOTIF);
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  const int listener =
      int(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  if (listener >= 0) {
    const std::string writable = g_options ? resolved_dir(g_options->writable_dir) : std::string();
    std::thread([listener, writable] {
      for (;;) {
        seccomp_notif req{};
        if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
          if (errno == EINTR || errno == ENOENT) continue;
          return;
        }
        seccomp_notif_resp resp{};
        resp.id = req.id;
        answer(req, writable, resp);
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      }
    }).detach();
    return;
  }
  // No listener (an older kernel): stopped at the call by SIGSYS, named when the handler runs.
  note_missing(
      fmt::format("seccomp user notification: {} (an exec from a forked child is blocked but not named)",
                  std::strerror(errno)));
  code = f.program(SECCOMP_RET_TRAP);
  prog = {static_cast<unsigned short>(code.size()), code.data()};
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSYS, &sa, nullptr);
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    note_missing(fmt::format("seccomp: cannot install the filter ({}): exec and sockets are not blocked",
                             std::strerror(errno)));
#else
  (void)any_exec;
  (void)only_exec;
  (void)fail_with_errno;
  note_missing("seccomp: the filter is written for x86_64 only: exec and sockets are not blocked");
#endif
}

// The symbolizer helper of a sandboxed process (kernels/simt/src/source_lines.cpp reaches it through
// DRIFTSCOPE_SYMBOLIZER_FD): it forks before the sandbox closes, so it may exec, and it runs only
// llvm-symbolizer or addr2line, with arguments it builds itself from a file name and an address.
std::string run_tool(const std::vector<std::string>& args) {
  int out[2];
  if (::pipe(out) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 2);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; pid > 0 && (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, std::size_t(n));
  ::close(out[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return text;
}

[[noreturn]] void serve_symbolizer(int fd) {
  std::string pending;
  char buf[4096];
  for (;;) {
    std::size_t nl;
    while ((nl = pending.find('\n')) == std::string::npos) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) ::_exit(0);
      pending.append(buf, std::size_t(n));
    }
    const std::string line = pending.substr(0, nl);
    pending.erase(0, nl + 1);
    const std::size_t a = line.find('\t'), b = line.rfind('\t');
    std::string text;
    if (a != std::string::npos && b > a) {
      const std::string tool = line.substr(0, a), file = line.substr(a + 1, b - a - 1),
                        address = line.substr(b + 1);
      const bool hex = address.size() > 2 && address.rfind("0x", 0) == 0 &&
                       address.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
      if (hex && tool == "llvm") text = run_tool({"llvm-symbolizer", "--obj=" + file, "--inlining", address});
      if (hex && tool == "addr2line") text = run_tool({"addr2line", "-i", "-e", file, address});
    }
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "\x04\n";
    for (std::size_t at = 0; at < text.size();) {
      const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
      if (n <= 0) ::_exit(0);
      at += std::size_t(n);
    }
  }
}

void start_symbolizer() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    note_missing(
        fmt::format("symbolizer helper: {} (memory findings name no source line)", std::strerror(errno)));
    return;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);
    ::dup2(sv[1], 3);
    ::close_range(4, ~0U, 0);  // the candidate's pipes to the harness are not the helper's to hold
    serve_symbolizer(3);
  }
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
    return;
  }
  ::fcntl(sv[0], F_SETFD, FD_CLOEXEC);
  ::setenv("DRIFTSCOPE_SYMBOLIZER_FD", std::to_string(sv[0]).c_str(), 1);
}

std::string call_name(int nr, int arg) {
  switch (nr) {
#if defined(__x86_64__)
    case __NR_execve: return "execve";
    case __NR_execveat: return "execveat";
    case __NR_socket:
      return arg == AF_INET    ? "socket(AF_INET)"
             : arg == AF_INET6 ? "socket(AF_INET6)"
                               : fmt::format("socket(domain {})", arg);
    case __NR_open:
    case __NR_openat:
    case __NR_openat2:
    case __NR_creat: return fmt::format("open('{}') for writing", g_page ? g_page->blocked_path : "");
    case __NR_mkdir:
    case __NR_mkdirat: return fmt::format("mkdir('{}')", g_page ? g_page->blocked_path : "");
    case __NR_rmdir: return fmt::format("rmdir('{}')", g_page ? g_page->blocked_path : "");
    case __NR_unlink:
    case __NR_unlinkat: return fmt::format("unlink('{}')", g_page ? g_page->blocked_path : "");
    case __NR_rename:
    case __NR_renameat:
    case __NR_renameat2: return fmt::format("rename touching '{}'", g_page ? g_page->blocked_path : "");
    case __NR_truncate: return fmt::format("truncate('{}')", g_page ? g_page->blocked_path : "");
    case __NR_link:
    case __NR_linkat: return fmt::format("link('{}')", g_page ? g_page->blocked_path : "");
    case __NR_symlink:
    case __NR_symlinkat: return fmt::format("symlink('{}')", g_page ? g_page->blocked_path : "");
    case __NR_mknod:
    case __NR_mknodat: return fmt::format("mknod('{}')", g_page ? g_page->blocked_path : "");
#endif
    default: return fmt::format("system call {}", nr);
  }
}

}  // namespace

void configure(std::optional<Options> o) {
  g_options = std::move(o);
  if (g_options && !g_page) {
    void* p = ::mmap(nullptr, sizeof(SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) g_page = new (p) SharedPage;
  }
  clear();
}

const std::optional<Options>& configured() { return g_options; }

void enter_child(const char* interpreter) {
  if (!g_options) return;
  if (!interpreter) start_symbolizer();  // before exec is closed: SIMT findings name their lines
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  set_rlimits();
  if (::unshare(CLONE_NEWNET) != 0)
    note_missing(fmt::format("network namespace: {} (only the socket filter keeps the network out)",
                             std::strerror(errno)));
  ::setenv("TMPDIR", g_options->writable_dir.c_str(), 1);
  // A Python candidate's process names what its code tried (python/driftscope/_host.py, an audit hook).
  ::setenv("DRIFTSCOPE_SANDBOX", g_options->writable_dir.c_str(), 1);
  restrict_writes(g_options->writable_dir);
  // A Python candidate's run: its child process must let the interpreter be exec'ed (by a child of
  // its own, which allows that one exec and no other); both fail forbidden calls with EPERM.
  const bool python = g_options->allow_exec;
  forbid_calls(python && !interpreter, interpreter, python || interpreter);
}

std::string blocked_call() {
  if (!g_page || g_page->blocked_nr.load() < 0) return "";
  return call_name(g_page->blocked_nr.load(), g_page->blocked_arg.load());
}

std::string missing() { return g_page ? std::string(g_page->missing) : std::string(); }

void clear() {
  if (!g_page) return;
  g_page->blocked_nr.store(-1);
  g_page->blocked_arg.store(-1);
  std::memset(g_page->blocked_path, 0, sizeof g_page->blocked_path);
  std::memset(g_page->missing, 0, sizeof g_page->missing);
}

}  // namespace ds::sandbox
