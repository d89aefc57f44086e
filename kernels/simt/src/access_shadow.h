// The hazard checker for kernels built with access hooks (Config::racecheck on a kernel library
// built by driftscope_add_simt_kernel(... CHECKED)): the compiler calls a hook at every load and
// store of the kernel (GCC/Clang -fsanitize=thread instrumentation, linked without the TSan
// runtime: access_hooks.cpp defines the hooks), and the hook looks the address up in the regions
// this launch watches and updates a shadow of the last write and the reads of every byte.
//
// Watched: the block's dynamic shared memory, each static __shared__ array the block reaches, and
// every simt::malloc allocation a writable pointer argument of the launch points into; under a
// poison (Config::poison != 0: verify's runs) also those only read-only arguments point into, for
// uninit reads alone (below). Two accesses to one byte, at least one a write, race when
//  - shared memory or global memory, same block: different threads in the same barrier phase that
//    no warp collective of their warp separates (as the fault-based checker of hazards.h);
//  - global memory, different blocks: always, unless both are atomics (blocks run at once on a
//    GPU, and nothing but an atomic orders them within a launch).
// Each race is reported with both accesses' file:line (the hook's return address). A read of a
// shared-memory byte the block never wrote is kept apart (take_uninit_reads), with its file:line;
// so, under a poison, is a read of global bytes that still hold the poison as simt::malloc filled
// them and that no checked store of the launch wrote. Global writes are not tracked across
// launches or by the host: the poison's bits are the record that nothing wrote them (a NaN with
// payload 0x7FC1 does not come out of arithmetic on real data; data could hold the finite
// 0x4A3D4A3D).
//
// Cost: one call per access of the kernel to watched memory. Most accesses of shared memory are
// answered in the hook from an 8-byte word per element (read_handled_inline); the rest reach
// on_access, which tries the region of the last access first (else a scan of a few) and keeps one
// 48-byte shadow cell per element touched. Global shadows live
// for one launch (mapped lazily, so only pages of the outputs actually touched cost anything);
// shared ones are reused and told apart by the block's serial number. Under a poison the reads of
// read-only arguments' memory (weights, inputs) cost a call and a compare of the bytes read, no
// shadow cells.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fiber_sched.h"
#include "hazards.h"
#include "simt/simt_cpu.h"

namespace simt::detail {

// Never called: the address access records' code addresses are kept as offsets from.
void access_pc_anchor();

// AddressSanitizer's shadow on x86-64 Linux: byte (address / 8 + kShadowOffset) describes the 8
// bytes at address & ~7; instrumented code calls a hook for an access whose shadow is not zero.
constexpr std::uintptr_t kShadowOffset = 0x7fff8000;

class AccessShadow {
 public:
  AccessShadow() = default;
  AccessShadow(const AccessShadow&) = delete;
  AccessShadow& operator=(const AccessShadow&) = delete;
  ~AccessShadow();

  // A checked launch: watches the allocations the writable pointer arguments of `d` point into,
  // and under `poison` (Config::poison, 0: none) those of its read-only ones, for uninit reads.
  void begin_launch(const LaunchDesc& d, unsigned poison);
  // Drops the launch's global shadows and returns the races it found, worded with file:line. The
  // benign ones, two threads writing the same value (take_benign), are not among them.
  std::vector<std::string> end_launch();
  // The benign hazards of the launches ended since the last call: write-after-write of the value
  // the element already held (every lane of a warp storing the warp's reduced sum), worded with
  // file:line. A GPU stores one of two equal values, so the order changes nothing.
  std::vector<std::string> take_benign();
  // The reads of never-written shared memory (and, under a poison, global memory) found since the
  // last call, worded with file:line.
  std::vector<std::string> take_uninit_reads();
  // A block of the launch starts (its dynamic shared memory at [smem, smem + bytes)) or ends.
  void begin_block(unsigned char* smem, std::size_t bytes, dim3 block_dim, uint3 block_idx);
  void end_block();
  // A barrier released the running block's threads: see the stores of this phase the
  // instrumentation did not check (below).
  void end_phase() {
    replay_reads();
    next_epoch();
  }
  // A static __shared__ array of `elem`-byte elements reached by a thread of the running block.
  void static_shared(void* p, std::size_t bytes, std::size_t elem);
  // A SIMT_DYNAMIC_SHARED declaration of `elem`-byte elements in the running block.
  void dynamic_shared_elem(std::size_t elem);

  // An access of instrumented code to watched memory (access_hooks.cpp). `pc`: the return
  // address of the hook's call. An access at the address of the calling thread's last atomic
  // (simt_cpu.h's atomic_at) counts as atomic.
  void on_access(const void* addr, std::size_t bytes, bool write, const void* pc);
  // Accesses the hooks handle inline, before on_access (true: handled), where check() would find
  // nothing. check() keeps a word per element of shared memory (the region's `settled`) that says
  // when that is so, with the phase it was said in (epoch_): the element was written in it and not
  // accessed since, or it was written in an earlier phase of the block and these threads (one or
  // two) read it in this one; any write sets the first, a read check() makes the second or none.
  //  - A read, in the phase its first readers read in: the two readers a cell keeps give way only
  //    to a thread of theirs or to a later phase, so a third reader changes nothing, and a second
  //    is kept here. In a later phase of the block than its write: the first reader is kept here.
  //  - A write, in a later block than every access the word records: nothing can race with it.
  // x in a GEMV, written once and read by every warp, reaches check() once per block.
  [[gnu::always_inline]] bool read_handled_inline(const void* addr, std::size_t bytes, const void* pc) {
    const std::size_t cell = settled_cell(addr, bytes);
    if (cell == kNoCell) return false;
    const std::uint64_t s = settled_.words[cell];
    const ThreadRec* t = sched_->current_thread();
    const auto thread = static_cast<std::uint16_t>(t->warp * 32u + t->lane);
    const auto first = static_cast<std::uint16_t>(s >> 32), second = static_cast<std::uint16_t>(s >> 48);
    // Most: a third reader. Kept small, so that the hooks save few registers.
    if (static_cast<std::uint32_t>(s) == epoch_ && second != kNoReader && first != kNoReader &&
        thread != first) [[likely]]
      return thread != second;
    return read_kept_inline(addr, cell, t, thread, pc);
  }
  // The rest of read_handled_inline: the phase's first or second reader, kept here.
  [[gnu::noinline]] bool read_kept_inline(const void* addr, std::size_t cell, const ThreadRec* t,
                                          std::uint16_t thread, const void* pc) {
    const std::uint64_t s = settled_.words[cell];
    const auto epoch = static_cast<std::uint32_t>(s);
    const auto first = static_cast<std::uint16_t>(s >> 32), second = static_cast<std::uint16_t>(s >> 48);
    if (addr == g_atomic_target && thread == g_atomic_thread) return false;  // an atomic's read
    Cell& c = settled_.cells[cell];
    if (epoch == epoch_) {  // read in this phase, or written
      // A RAW to check; its own record, for check() to bring up to date.
      if (first == kNoReader || thread == first || second != kNoReader) return false;
      record(c.r2, t, thread, pc);
      settled_.words[cell] = settled_word(epoch_, first, thread);
      return true;
    }
    // Written in an earlier phase of this block, and not accessed since: the phase's first reader.
    if (first != kNoReader || epoch < block_epoch_) return false;
    record(c.r1, t, thread, pc);
    settled_.words[cell] = settled_word(epoch_, thread, kNoReader);
    return true;
  }
  [[gnu::always_inline]] bool write_handled_inline(const void* addr, std::size_t bytes, const void* pc) {
    const std::size_t cell = settled_cell(addr, bytes);
    if (cell == kNoCell) return false;
    const std::uint64_t s = settled_.words[cell];
    if (s == 0 || static_cast<std::uint32_t>(s) >= block_epoch_) return false;
    const ThreadRec* t = sched_->current_thread();
    const unsigned thread = t->warp * 32u + t->lane;
    const bool atomic = addr == g_atomic_target && thread == g_atomic_thread;
    // The cell's readers are of an earlier block: they give way as they are.
    record(settled_.cells[cell].w, t, static_cast<std::uint16_t>(thread | (atomic ? kAtomic : 0)), pc);
    settled_.words[cell] = written_word(epoch_);
    return true;
  }

 private:
  struct Access {              // one recorded access; block 0: none
    std::uint32_t block = 0;   // the block's serial number (1, 2, ... over the checker's life)
    std::uint32_t phase = 0;   // barrier phases the block had completed
    std::uint16_t thread = 0;  // linear thread index in the block | kAtomic for an atomic
    std::uint16_t sync = 0;    // warp collectives the thread's warp had completed (low bits)
    std::int32_t pc = 0;       // from access_pc_anchor (pc_offset); 0: unknown
  };
  struct Cell {
    Access w;       // the last write
    Access r1, r2;  // reads since it, of up to two different threads
  };
  enum class Kind : std::uint8_t { dynamic_shared, static_shared, global };
  // Accesses are recorded per element of the memory's type (a cell per `1 << shift` bytes, at
  // most 8): as wide as a global argument's element type, the smallest SIMT_DYNAMIC_SHARED type
  // declared before the block's first access, a static __shared__ array's element type. An access
  // of part of an element counts for the whole element.
  struct Region {
    unsigned char* lo;
    unsigned char* hi;
    Cell* cells;  // global: null where only read-only arguments point (no races, uninit reads only)
    Kind kind;
    unsigned shift;
    const PtrArg* arg;                 // global: the first writable argument pointing into it
    std::size_t mapped_bytes = 0;      // global: the shadow's own mapping, unmapped at the launch's end
    unsigned char* copy = nullptr;     // shared: the bytes at the start of the phase
    std::uint64_t* settled = nullptr;  // shared: a word per cell (read_handled_inline)
  };
  struct Finding {
    char kind[8];  // "RAW", "WAR", "WAW", "uninit"
    Kind region;
    std::size_t offset;  // in its region (global: from the argument's pointer)
    const PtrArg* arg;
    Access first, second;
    bool first_write, second_write;
    // WAW: some occurrence stored a value other than the element's (or one not seen: a store the
    // instrumentation did not check). Until then the finding is benign.
    bool differs;
  };
  // A WAW store whose hook has run and whose store has not landed yet: the element's bytes before
  // it, compared with what it stored at the next call into the shadow (settle_stores). The store
  // follows its hook at once, and no other thread runs in between (a checked launch does not
  // interleave at accesses).
  struct PendingStore {
    const unsigned char* at;
    std::uint32_t size;     // the element's, at most 8
    std::uint32_t finding;  // in findings_
    unsigned char before[8];
  };
  // GCC's instrumentation checks one access per address and basic block: the store of `x += v`
  // follows the checked load of x and is not checked itself. Such a store shows as a change of
  // bytes a thread read, found at the next barrier (or the end of the block): a change that no
  // checked write of the same phase explains is checked as a write by the thread that read the
  // byte in that phase, at the read's line. Shared memory is compared with a copy taken at the
  // start of the phase (it is small, and read often); global memory through a log of its reads
  // (outputs are large, and seldom read).
  struct LoggedRead {
    std::uint32_t region;
    std::uint32_t offset;
    std::uint32_t size;  // at most 16
    Access who;
    unsigned char bytes[16];
  };
  template <bool kWrite>
  void access(const void* addr, std::size_t bytes, const void* pc);
  static constexpr std::size_t kNoCell = ~std::size_t{0};
  // The element of the settled region [addr, addr + bytes) falls in, if it is one element and no
  // store is pending (settle_stores).
  std::size_t settled_cell(const void* addr, std::size_t bytes) const {
    const auto* a = static_cast<const unsigned char*>(addr);
    if (a < settled_.lo || a >= settled_.hi || !pending_.empty()) return kNoCell;
    const auto from = static_cast<std::size_t>(a - settled_.lo);
    const std::size_t cell = from >> settled_.shift;
    return ((from + bytes - 1) >> settled_.shift) == cell ? cell : kNoCell;
  }
  // An access of running thread `t` (`thread`: its index, with kAtomic) at `pc`, into `into`.
  void record(Access& into, const ThreadRec* t, std::uint16_t thread, const void* pc) const {
    into.block = serial_;
    into.phase = static_cast<std::uint32_t>(sched_->phase());
    into.thread = thread;
    into.sync = static_cast<std::uint16_t>(t->wr->syncs);
    // The hook's return address is the instruction after the call: step back into the call.
    into.pc = pc_offset(static_cast<const char*>(pc) - 1);
  }
  static constexpr std::uint16_t kAtomic = 0x8000;  // in Access::thread: the access was an atomic
  static constexpr std::uint16_t kThreadMask = 0x7fff;
  static constexpr std::uint16_t kNoReader = 0xffff;  // in a settled word: no second reader yet
  static std::uint64_t settled_word(std::uint32_t epoch, std::uint16_t t1, std::uint16_t t2) {
    return epoch | std::uint64_t{t1} << 32 | std::uint64_t{t2} << 48;
  }
  static std::uint64_t written_word(std::uint32_t epoch) { return settled_word(epoch, kNoReader, kNoReader); }
  // Code addresses are kept as 32-bit offsets from a function of this module (access_pc_anchor):
  // the hooks, and so the kernels that call them, are linked into the same module.
  static std::int32_t pc_offset(const void* pc) {
    const std::intptr_t d =
        reinterpret_cast<std::intptr_t>(pc) - reinterpret_cast<std::intptr_t>(&access_pc_anchor);
    return d > INT32_MIN && d <= INT32_MAX && d != 0 ? static_cast<std::int32_t>(d) : 0;
  }
  // A new block or phase: the settled words of the last one stop counting.
  void next_epoch();
  void replay_reads();
  void settle_stores();
  // A change of element `cell` of `r` that no checked write explains: a store by the thread that
  // read it in this phase, if any.
  void unchecked_store(const Region& r, std::size_t cell, const Access& reader);
  // A WAW of `finding` on the element at byte `off` of `r`: its store is compared when it lands.
  void expect_store(const Region& r, std::size_t off, int finding);

  struct StaticShadow {
    void* addr;
    std::size_t bytes;
    std::vector<Cell> cells;
    std::vector<unsigned char> copy;
    std::vector<std::uint64_t> settled;
  };

  // Makes accesses to [lo, hi) reach the hooks (watched) or not.
  static void mark(const unsigned char* lo, const unsigned char* hi, bool watched);
  void add_region(const Region& r);
  // Stops watching regions_[from, end) and drops them.
  void drop_regions(std::size_t from);
  void check(const Region& r, std::size_t cell, bool write, const Access& me);
  // A read of global [from, to) of `r` under a poison: an uninit read where its bytes, widened to
  // whole elements and at least 4 bytes, all hold the poison and no checked store wrote them.
  void check_poison_read(const Region& r, std::size_t from, std::size_t to, const Access& me);
  // Returns the finding's index in findings_ (a new one or the same sites' earlier one), or -1.
  int note(const char* kind, const Region& r, std::size_t off, const Access& first, bool first_write,
           const Access& second, bool second_write);
  std::string word(const Finding& f) const;

  const LaunchDesc* launch_ = nullptr;
  std::uint16_t poison_ = 0;        // the launch's poison word (poison_word); 0: no poison, no check
  std::string kernel_;              // its name, for the uninit reads kept past the launch
  std::uint32_t serial_ = 0;        // of the running block
  std::uint32_t first_serial_ = 0;  // of the launch's first block
  dim3 block_dim_{1, 1, 1};
  dim3 grid_dim_{1, 1, 1};
  std::vector<Region> regions_;  // [0, n_global_): the launch's allocations; then this block's
  std::size_t n_global_ = 0;
  Region* hint_ = nullptr;  // in regions_: the region of the last watched access, tried first
  // The bounds and settled words of the shared memory region of the last access to one, for
  // read_handled_inline: one load each. Kept while the hint moves to global memory and back (a
  // thread's reads of shared memory and its stores of outputs alternate).
  struct {
    const unsigned char* lo = nullptr;
    const unsigned char* hi = nullptr;
    std::uint64_t* words = nullptr;
    Cell* cells = nullptr;
    unsigned shift = 0;
  } settled_;
  void set_hint(Region* r) {
    hint_ = r;
    if (r->settled != nullptr) settled_ = {r->lo, r->hi, r->settled, r->cells, r->shift};
  }
  // The regions changed (or a region's cell width).
  void forget_hint() {
    hint_ = nullptr;
    settled_ = {};
  }
  Sched* sched_ = nullptr;         // of the launching thread, where checked launches run
  std::uint32_t epoch_ = 1;        // of the running block's phase (settled words); 0: none
  std::uint32_t block_epoch_ = 1;  // of its first phase
  std::vector<Cell> dyn_cells_;
  std::vector<std::uint64_t> dyn_settled_;
  bool dyn_accessed_ = false;  // the block accessed its dynamic shared memory: its shift is fixed
  bool dyn_declared_ = false;  // a SIMT_DYNAMIC_SHARED declaration set its shift
  std::vector<unsigned char> dyn_copy_;
  std::vector<StaticShadow> statics_;
  std::vector<Finding> findings_;
  std::size_t more_ = 0;
  std::vector<PendingStore> pending_;
  bool store_landed_ = false;  // check() sees a store after the fact (unchecked_store): value unknown
  std::vector<std::string> benign_words_;
  std::vector<LoggedRead> reads_;  // of global memory, since the last barrier
  std::vector<Finding> uninit_;    // of the running launch
  std::vector<std::string> uninit_words_;
};

// The shadow of the checked launch running on this host thread (null: none, the hooks return).
extern constinit thread_local AccessShadow* tl_access_shadow;
// The same for the hooks' hot path, without a thread-local lookup (a call into the loader in a
// shared library): checked launches run one at a time, on their launching thread.
extern std::atomic<AccessShadow*> g_access_shadow;

}  // namespace simt::detail
