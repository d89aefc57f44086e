#include "hazards.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <new>
#include <utility>

#include "source_lines.h"

namespace simt::detail {
namespace {

constexpr std::size_t kKeptPerBlock = 8;  // distinct hazards (kind and both sites) kept per block

thread_local HazardChecker* tl_checker = nullptr;
thread_local bool tl_stepping = false;

#if defined(__x86_64__) && defined(__linux__)
constexpr bool kSupported = true;
constexpr greg_t kTrapFlag = 0x100;  // EFLAGS.TF: a debug trap after the next instruction

struct sigaction g_old_segv, g_old_trap;

// A signal that is not the checker's goes where it would have gone without it.
void chain(const struct sigaction& old, int sig, siginfo_t* si, void* uc) {
  if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
    old.sa_sigaction(sig, si, uc);
  } else if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) {
    old.sa_handler(sig);
  } else {
    ::sigaction(sig, &old, nullptr);  // the faulting instruction runs again and meets the default
    if (sig == SIGTRAP) ::raise(sig);
  }
}

void on_segv(int sig, siginfo_t* si, void* raw) {
  auto* uc = static_cast<ucontext_t*>(raw);
  HazardChecker* c = tl_checker;
  const bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // page-fault error code: W bit
  const auto* pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
  if (c != nullptr && !tl_stepping && c->on_fault(si->si_addr, write, pc)) {
    uc->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
    tl_stepping = true;
    return;
  }
  chain(g_old_segv, sig, si, raw);
}

void on_trap(int sig, siginfo_t* si, void* raw) {
  auto* uc = static_cast<ucontext_t*>(raw);
  if (tl_stepping) {
    tl_stepping = false;
    uc->uc_mcontext.gregs[REG_EFL] &= ~kTrapFlag;
    if (tl_checker != nullptr) tl_checker->on_step_done();
    return;
  }
  chain(g_old_trap, sig, si, raw);
}
#else
constexpr bool kSupported = false;
#endif

std::string thread_text(std::int32_t linear, dim3 b) {
  const auto l = static_cast<unsigned>(linear);
  return fmt::format("({},{},{})", l % b.x, (l / b.x) % b.y, l / (b.x * b.y));
}

}  // namespace

void set_current_checker(HazardChecker* c) { tl_checker = c; }

unsigned char* HazardChecker::arena(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t want = (bytes + page - 1) / page * page;
  if (want > arena_bytes_) {
    if (arena_ != nullptr) ::munmap(arena_, arena_bytes_);
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    arena_ = static_cast<unsigned char*>(p);
    arena_bytes_ = want;
  }
  return arena_;
}

void HazardChecker::begin_block(unsigned char* base, std::size_t bytes, unsigned nthreads, dim3 block,
                                AccessCtxFn ctx) {
  (void)nthreads;
  base_ = base;
  bytes_ = bytes;
  elem_ = 0;
  block_ = block;
  ctx_ = ctx;
  cells_.assign(bytes, Cell{});
  block_hazards_.clear();
  block_hazards_.reserve(kKeptPerBlock);
  n_pending_ = 0;
  if (bytes_ != 0 && arena_bytes_ != 0) ::mprotect(arena_, arena_bytes_, PROT_NONE);
}

void HazardChecker::note_elem(std::size_t elem_bytes) {
  if (elem_bytes != 0 && (elem_ == 0 || elem_bytes < elem_)) elem_ = elem_bytes;
}

void HazardChecker::end_block(uint3 block_idx) {
  if (arena_bytes_ != 0) ::mprotect(arena_, arena_bytes_, PROT_READ | PROT_WRITE);
  tl_stepping = false;
  for (const Hazard& h : block_hazards_) {
    const bool benign = std::strcmp(h.kind, "WAW") == 0 && !h.differs;
    std::vector<std::string>& into = benign ? benign_ : found_;
    if (into.size() >= kKeptPerBlock) {
      more_ += benign ? 0 : 1;
      continue;
    }
    const bool first_reads = std::strcmp(h.kind, "WAR") == 0;
    const bool second_reads = std::strcmp(h.kind, "RAW") == 0;
    std::string text = fmt::format(
        "{}{} hazard on dynamic shared memory byte {}: thread {} {} at {}, then thread {} {}{} at {}, with "
        "no "
        "barrier between [block ({},{},{})]",
        benign ? "benign " : "", h.kind, h.offset, thread_text(h.first_thread, block_),
        first_reads ? "read" : "wrote", site_text(h.first_pc), thread_text(h.second_thread, block_),
        second_reads ? "read" : "wrote", benign ? " the same value" : "", site_text(h.second_pc), block_idx.x,
        block_idx.y, block_idx.z);
    bool dup = false;  // the same pair of sites in another block says nothing new
    for (const std::string& f : into)
      dup = dup || f.substr(0, f.find(" [block")) == text.substr(0, text.find(" [block"));
    if (!dup) into.push_back(std::move(text));
  }
  block_hazards_.clear();
}

HazardReport HazardChecker::take() {
  HazardReport out{std::exchange(found_, {}), std::exchange(benign_, {})};
  if (more_ != 0) out.real.push_back(fmt::format("and {} more hazard(s) at the same or other sites", more_));
  more_ = 0;
  return out;
}

int HazardChecker::note(const char* kind, std::size_t offset, std::int32_t first, const void* first_pc,
                        std::int32_t second, const void* second_pc) {
  for (std::size_t i = 0; i < block_hazards_.size(); ++i) {
    const Hazard& h = block_hazards_[i];
    if (std::strcmp(h.kind, kind) == 0 && h.first_pc == first_pc && h.second_pc == second_pc)
      return static_cast<int>(i);
  }
  if (block_hazards_.size() == kKeptPerBlock) return -1;  // capacity reserved: never allocate here
  Hazard h{};
  std::memcpy(h.kind, kind, 4);
  h.offset = offset;
  h.first_thread = first;
  h.second_thread = second;
  h.first_pc = first_pc;
  h.second_pc = second_pc;
  block_hazards_.push_back(h);
  return static_cast<int>(block_hazards_.size() - 1);
}

// Runs inside the SIGSEGV handler: no allocation, no locks.
bool HazardChecker::on_fault(const void* addr, bool write, const void* pc) {
  const auto* a = static_cast<const unsigned char*>(addr);
  if (arena_ == nullptr || a < arena_ || a >= arena_ + arena_bytes_) return false;
  ::mprotect(arena_, arena_bytes_, PROT_READ | PROT_WRITE);
  if (a >= base_ + bytes_ || ctx_ == nullptr) return true;  // past the launch's size: ASan's business
  const AccessCtx me = ctx_();
  const std::uint64_t ph = me.phase + 1;
  const auto t = static_cast<std::int32_t>(me.thread);
  // Same thread, or same warp with a warp collective in between: ordered, no hazard.
  const auto ordered = [&](std::int32_t other, std::uint32_t warp, std::uint32_t sync) {
    return other == t || (warp == me.warp && sync != me.warp_sync);
  };
  const std::size_t from = static_cast<std::size_t>(a - base_);
  const std::size_t to = std::min(bytes_, from + (elem_ == 0 ? 1 : elem_));
  for (std::size_t off = from; off < to; ++off) {
    Cell& c = cells_[off];
    if (write) {
      if (c.w_phase == ph && !ordered(c.writer, c.w_warp, c.w_sync))
        expect_store(note("WAW", off, c.writer, c.w_pc, t, pc), from, to);
      if (c.r_phase == ph) {
        if (c.r1 >= 0 && !ordered(c.r1, c.r1_warp, c.r1_sync))
          note("WAR", off, c.r1, c.r1_pc, t, pc);
        else if (c.r2 >= 0 && !ordered(c.r2, c.r2_warp, c.r2_sync))
          note("WAR", off, c.r2, c.r2_pc, t, pc);
      }
      c.w_phase = ph;
      c.writer = t;
      c.w_warp = me.warp;
      c.w_sync = me.warp_sync;
      c.w_pc = pc;
      c.r_phase = 0;  // later reads see this value
    } else {
      if (c.w_phase == ph && !ordered(c.writer, c.w_warp, c.w_sync))
        note("RAW", off, c.writer, c.w_pc, t, pc);
      if (c.r_phase != ph) {
        c.r_phase = ph;
        c.r1 = t, c.r1_warp = me.warp, c.r1_sync = me.warp_sync, c.r1_pc = pc;
        c.r2 = -1;
      } else if (c.r1 == t) {
        c.r1_sync = me.warp_sync, c.r1_pc = pc;
      } else if (c.r2 < 0 || c.r2 == t) {
        c.r2 = t, c.r2_warp = me.warp, c.r2_sync = me.warp_sync, c.r2_pc = pc;
      }
    }
  }
  return true;
}

void HazardChecker::expect_store(int hazard, std::size_t from, std::size_t to) {
  if (hazard < 0) return;
  const auto i = static_cast<std::size_t>(hazard);
  for (std::size_t p = 0; p < n_pending_; ++p)
    if (pending_[p].hazard == i) return;  // another byte of the same store
  if (n_pending_ == std::size(pending_) || to - from > sizeof pending_[0].before) {
    block_hazards_[i].differs = true;  // not compared: not known to be the same
    return;
  }
  PendingStore& p = pending_[n_pending_++];
  p.hazard = i;
  p.from = from;
  p.to = to;
  std::memcpy(p.before, base_ + from, to - from);
}

// Runs inside the SIGTRAP handler, after the faulting instruction, with the arena still open.
void HazardChecker::on_step_done() {
  for (std::size_t p = 0; p < n_pending_; ++p) {
    const PendingStore& s = pending_[p];
    if (std::memcmp(base_ + s.from, s.before, s.to - s.from) != 0) block_hazards_[s.hazard].differs = true;
  }
  n_pending_ = 0;
  if (arena_bytes_ != 0) ::mprotect(arena_, arena_bytes_, PROT_NONE);
}

HazardSignals::HazardSignals() {
#if defined(__x86_64__) && defined(__linux__)
  struct sigaction sa {};
  sa.sa_sigaction = &on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, &g_old_segv);
  sa.sa_sigaction = &on_trap;
  ::sigaction(SIGTRAP, &sa, &g_old_trap);
#endif
}

HazardSignals::~HazardSignals() {
#if defined(__x86_64__) && defined(__linux__)
  ::sigaction(SIGSEGV, &g_old_segv, nullptr);
  ::sigaction(SIGTRAP, &g_old_trap, nullptr);
#endif
}

}  // namespace simt::detail

std::string simt::racecheck_unsupported() {
  return detail::kSupported ? std::string()
                            : std::string("the shared-memory hazard checker needs x86-64 Linux");
}
