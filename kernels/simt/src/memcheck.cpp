#include "memcheck.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <string>
#include <vector>

#include "access_shadow.h"
#include "launch_sink.h"
#include "memcheck_blocks.h"
#include "sched.h"
#include "source_lines.h"

namespace simt::detail {

std::atomic<bool> g_memcheck_launch{false};

namespace {

// One bad access: the first of a launch stops it, so there is one per launch at most.
struct BadAccess {
  std::uintptr_t addr = 0;
  std::size_t bytes = 0;  // 0: unknown (a fault)
  std::size_t align = 0;  // what a GPU needs of its address
  bool write = false;
  bool fault = false;  // the access faulted (no shadow told of it before)
  bool cast = false;   // seen at a pointer cast (checked_reinterpret_cast): read or write unknown
  bool unwritten = false;  // a read of bytes nothing wrote (initcheck): the launch went on
  const void* pc = nullptr;
  const char* file = nullptr;  // where known without the pc (a cast's source_location)
  unsigned line = 0;
  uint3 thread{}, block{};
  AddressPlace place;
};

const LaunchDesc* g_launch = nullptr;
std::vector<BadAccess> g_bad;  // reserved at the launch's start: a fault handler pushes without allocating
bool g_unwritten_seen = false;  // a launch reports its first uninitialised read only

constexpr std::size_t kAltStackBytes = 64 * 1024;
struct sigaction g_old_segv, g_old_bus;

unsigned char shadow_at(std::uintptr_t a) {
  return *reinterpret_cast<const unsigned char*>((a >> 3) + kShadowOffset);
}

std::string xyz(const uint3& v) { return fmt::format("({},{},{})", v.x, v.y, v.z); }

// What the access was, from where it fell and how.
const char* kind_of(const BadAccess& b) {
  if (b.unwritten) return "uninitialized";  // with " read": memcheck_uninit_note
  if (b.fault && b.addr < 4096) return "null pointer";
  switch (b.place.kind) {
    case AddressKind::out_of_bounds: return "out-of-bounds";
    case AddressKind::freed: return "use-after-free";
    case AddressKind::inside: return b.fault ? "faulting" : "misaligned";
    case AddressKind::unknown: break;
  }
  return b.fault ? "wild pointer" : "invalid";
}

std::string word(const BadAccess& b, const std::string& kernel) {
  const std::string size = b.bytes != 0 ? fmt::format(" of {} bytes", b.bytes) : std::string();
  std::string where = b.place.words.empty() ? fmt::format("address {:#x}, in no allocation", b.addr)
                                            : fmt::format("{} (address {:#x})", b.place.words, b.addr);
  if (b.unwritten)
    where +=
        "; nothing wrote it before this read (no store of a kernel, cudaMemcpy or cudaMemset reached it)";
  else if (b.place.kind == AddressKind::inside && !b.fault)
    where += fmt::format(": a {}-byte access needs an address that is a multiple of {}{}", b.bytes, b.align,
                         b.cast ? " (seen where the kernel casts the pointer to its type)" : "");
  if (b.fault) where += "; the access faulted and did not land";
  return fmt::format("memcheck: {}: {} {}{} at {}, thread {} of block {}: {}", kernel, kind_of(b),
                     b.cast    ? "access"
                     : b.write ? "write"
                               : "read",
                     size, b.file ? fmt::format("{}:{}", b.file, b.line) : site_text(b.pc), xyz(b.thread),
                     xyz(b.block), where);
}

// An access of the running kernel thread at `addr`, placed among memcheck's memory.
BadAccess access_by_running_thread(std::uintptr_t addr, std::size_t bytes, const void* pc) {
  BadAccess b;
  b.addr = addr;
  b.bytes = bytes;
  b.pc = pc;
  b.thread = threadIdx;
  b.block = blockIdx;
  b.place = place_of(addr);
  return b;
}

void chain(const struct sigaction& old, int sig, siginfo_t* si, void* uc) {
  if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
    old.sa_sigaction(sig, si, uc);
  } else if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) {
    old.sa_handler(sig);
  } else {
    ::sigaction(sig, &old, nullptr);  // the faulting instruction runs again and meets the default
  }
}

// A fault of the kernel under memcheck: a null or wild pointer. On the alternate stack, since the
// fault may be the fiber's own stack; the thread is abandoned from here and never returns to the
// instruction.
void on_fault(int sig, siginfo_t* si, void* raw) {
  if (!g_memcheck_launch.load(std::memory_order_relaxed) || !running_kernel_thread() ||
      g_bad.size() == g_bad.capacity()) {
    chain(sig == SIGBUS ? g_old_bus : g_old_segv, sig, si, raw);
    return;
  }
  const auto* uc = static_cast<const ucontext_t*>(raw);
  BadAccess b;
  b.addr = reinterpret_cast<std::uintptr_t>(si->si_addr);
  b.fault = true;
#if defined(__x86_64__)
  b.pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
  b.write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // the page fault's error code: a write
#endif
  b.thread = threadIdx;
  b.block = blockIdx;
  g_bad.push_back(std::move(b));
  // The place is looked up when the launch ends: this handler takes no lock.
  fail_running_thread("memcheck: the kernel's access faulted");
}

void install_alt_stack() {
  static thread_local void* stack = nullptr;
  if (stack != nullptr) return;
  stack = ::mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (stack == MAP_FAILED) {
    stack = nullptr;
    return;
  }
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = kAltStackBytes;
  ::sigaltstack(&ss, nullptr);
}

}  // namespace

void memcheck_begin_launch(const LaunchDesc& d) {
  g_launch = &d;
  g_bad.clear();
  g_bad.reserve(4);
  g_unwritten_seen = false;
  install_alt_stack();
  struct sigaction sa {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, &g_old_segv);
  ::sigaction(SIGBUS, &sa, &g_old_bus);
  g_memcheck_launch.store(true, std::memory_order_relaxed);
}

std::vector<std::string> memcheck_end_launch(bool* stopped) {
  g_memcheck_launch.store(false, std::memory_order_relaxed);
  *stopped = std::any_of(g_bad.begin(), g_bad.end(), [](const BadAccess& b) { return !b.unwritten; });
  ::sigaction(SIGSEGV, &g_old_segv, nullptr);
  ::sigaction(SIGBUS, &g_old_bus, nullptr);
  std::vector<std::string> out;
  for (BadAccess& b : g_bad) {
    if (b.fault) b.place = place_of(b.addr);
    out.push_back(word(b, kernel_name(g_launch->kernel)));
  }
  g_bad.clear();
  g_launch = nullptr;
  return out;
}

bool memcheck_access(const void* p, std::size_t bytes, bool write, const void* pc) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t last = a + (bytes == 0 ? 0 : bytes - 1);
  bool watched = false;
  bool bad = false;
  bool unwritten = false;
  for (std::uintptr_t g = a & ~std::uintptr_t{7}; g <= last; g += 8) {
    const unsigned char s = shadow_at(g);
    if (s == 0 || s == kShadowOwned) continue;
    const std::uintptr_t end_in_granule = (last < g + 7 ? last : g + 7) - g;
    if (s == kShadowWatched) {
      watched = true;
    } else if (unwritten_shadow(s)) {
      unwritten = true;
      bad |= end_in_granule >= (s & 0x0Fu);  // past the block's last byte in its partial granule
    } else if (s < 8) {
      bad |= end_in_granule >= s;  // a byte past the partial granule's `s`
    } else {
      bad = true;
    }
  }
  const bool misaligned = (bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16) && a % bytes != 0;
  if (!bad && !misaligned && !unwritten) return watched;  // most accesses: nothing to mark or report
  // Findings come from kernel threads of a memcheck launch; the host's stores only mark. (Asked
  // only here: the running thread is a thread-local lookup, through the loader in a plugin.)
  const bool in_launch = g_memcheck_launch.load(std::memory_order_relaxed) && running_kernel_thread();
  if (unwritten && !bad && !(in_launch && misaligned)) {
    if (write) {
      note_written(a, last + 1);
    } else if (const std::uintptr_t first = first_unwritten(a, last + 1); first != 0 && in_launch) {
      // Reported once a launch, and the bytes counted as written from here, so it runs on at the
      // cost of a plain one: a GPU goes on after such a read too.
      note_written(a, last + 1);
      if (!g_unwritten_seen && g_bad.size() < g_bad.capacity()) {
        g_unwritten_seen = true;
        BadAccess b = access_by_running_thread(first, bytes, pc);
        b.unwritten = true;
        g_bad.push_back(std::move(b));
      }
    }
  }
  if ((!bad && !misaligned) || !in_launch || g_bad.size() == g_bad.capacity()) return watched;
  {
    BadAccess b = access_by_running_thread(a, bytes, pc);
    b.write = write;
    b.align = bytes;
    if (bad && b.place.kind == AddressKind::inside) {
      // The first byte is the block's own; the access runs past its end.
      b.place = place_of(last);
    }
    if (!bad && b.place.kind != AddressKind::inside) return watched;  // memory memcheck does not own
    g_bad.push_back(std::move(b));
  }
  fail_running_thread("memcheck: a bad access");
}

void misaligned_cast(const void* p, std::size_t align, std::size_t size, const char* file, unsigned line) {
  const void* pc = __builtin_return_address(0);
  if (!g_memcheck_launch.load(std::memory_order_relaxed) || !running_kernel_thread() ||
      g_bad.size() == g_bad.capacity())
    return;
  {
    BadAccess b = access_by_running_thread(reinterpret_cast<std::uintptr_t>(p), size, pc);
    b.align = align;
    b.cast = true;
    b.file = file;
    b.line = line;
    // Memory memcheck does not own (a local, a global of the host build) may be laid out unlike on
    // a GPU: no finding there. Static __shared__ arrays it owns, and lays out 16-byte aligned.
    if (b.place.kind != AddressKind::inside) return;
    g_bad.push_back(std::move(b));
  }
  fail_running_thread("memcheck: a misaligned pointer cast");
}

}  // namespace simt::detail
