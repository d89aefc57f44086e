#include "access_shadow.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "allocations.h"
#include "fiber_sched.h"
#include "launch_sink.h"
#include "memcheck.h"
#include "source_lines.h"

namespace simt::detail {

[[gnu::noinline]] void access_pc_anchor() { asm volatile(""); }

constinit thread_local AccessShadow* tl_access_shadow = nullptr;
std::atomic<AccessShadow*> g_access_shadow{nullptr};

namespace {

constexpr std::size_t kKept = 8;  // distinct findings (kind and both sites) worded per launch
// Distinct races recorded per launch: more than are worded, so that benign ones, told apart only
// when their stores land, crowd out no real one.
constexpr std::size_t kRecorded = 2 * kKept;
const void* pc_of(std::int32_t off) {
  return off == 0 ? nullptr
                  : reinterpret_cast<const void*>(reinterpret_cast<std::intptr_t>(&access_pc_anchor) + off);
}

std::string site_text(std::int32_t off) { return detail::site_text(pc_of(off)); }

// log2 of the cell width for `elem`-byte elements: a power of two up to 8, else bytes.
unsigned shift_for(std::size_t elem) {
  return elem != 0 && elem <= 8 && (elem & (elem - 1)) == 0 ? static_cast<unsigned>(std::countr_zero(elem))
                                                            : 0;
}

// memcmp(a, b, n) == 0 for an element (n at most 8), without a call for the usual sizes.
bool same_bytes(const unsigned char* a, const unsigned char* b, std::size_t n) {
  const auto same = [&]<class T>(T) {
    T x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    return x == y;
  };
  switch (n) {
    case 1: return *a == *b;
    case 2: return same(std::uint16_t{});
    case 4: return same(std::uint32_t{});
    case 8: return same(std::uint64_t{});
    default: return std::memcmp(a, b, n) == 0;
  }
}

std::string xyz(std::uint64_t linear, dim3 d) {
  return fmt::format("({},{},{})", linear % d.x, (linear / d.x) % d.y, linear / (std::uint64_t(d.x) * d.y));
}

}  // namespace

AccessShadow::~AccessShadow() { (void)end_launch(); }

void AccessShadow::begin_launch(const LaunchDesc& d, unsigned poison) {
  (void)end_launch();
  benign_words_.clear();  // a failed launch's
  launch_ = &d;
  kernel_ = kernel_name(d.kernel);
  grid_dim_ = d.grid;
  first_serial_ = serial_ + 1;
  poison_ = poison != 0 ? poison_word(poison) : 0;
  // Writable arguments first: an allocation a read-only argument shares with one is tracked in full.
  // Read-only memory matters only for reads of the poison.
  for (const auto& [alloc, arg] : argument_allocations(d, poison_ != 0)) {
    Region r{alloc.base, alloc.base + alloc.bytes, nullptr, Kind::global, shift_for(arg->elem_size), arg};
    if (arg->writable) {
      // Mapped, not allocated: zero pages cost nothing until the kernel touches their bytes.
      r.mapped_bytes = std::max<std::size_t>(alloc.bytes, 1) * sizeof(Cell);
      void* m = ::mmap(nullptr, r.mapped_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      r.cells = static_cast<Cell*>(m);
    }
    add_region(r);
  }
  n_global_ = regions_.size();
}

std::vector<std::string> AccessShadow::end_launch() {
  settle_stores();
  std::vector<Region> globals(regions_.begin(), regions_.begin() + static_cast<std::ptrdiff_t>(n_global_));
  drop_regions(0);
  for (const Region& r : globals)
    if (r.cells != nullptr) ::munmap(r.cells, r.mapped_bytes);
  n_global_ = 0;
  // Real hazards first, each list in the order found; a benign one is worded apart.
  std::vector<std::string> out;
  for (const Finding& f : findings_) {
    if (std::strcmp(f.kind, "WAW") == 0 && !f.differs) continue;
    if (out.size() < kKept)
      out.push_back(word(f));
    else
      ++more_;
  }
  for (const Finding& f : findings_)
    if (std::strcmp(f.kind, "WAW") == 0 && !f.differs && benign_words_.size() < kKept)
      benign_words_.push_back(word(f));
  for (const Finding& f : uninit_)
    if (uninit_words_.size() < kKept) uninit_words_.push_back(fmt::format("{}: {}", kernel_, word(f)));
  uninit_.clear();
  if (more_ != 0) out.push_back(fmt::format("and {} more finding(s) at the same or other sites", more_));
  findings_.clear();
  more_ = 0;
  launch_ = nullptr;
  return out;
}

std::vector<std::string> AccessShadow::take_benign() { return std::exchange(benign_words_, {}); }

std::vector<std::string> AccessShadow::take_uninit_reads() {
  std::vector<std::string> out = std::move(uninit_words_);
  uninit_words_.clear();
  return out;
}

void AccessShadow::begin_block(unsigned char* smem, std::size_t bytes, dim3 block_dim, uint3 /*block_idx*/) {
  ++serial_;
  next_epoch();
  block_epoch_ = epoch_;
  sched_ = tl_sched;
  // No thread of this block has made an atomic yet: the last atomic of an earlier block or launch
  // (at an address a plain access of this block may reach) must not make that access count as one.
  g_atomic_target = nullptr;
  block_dim_ = block_dim;
  drop_regions(n_global_);
  dyn_accessed_ = false;
  if (bytes != 0) {
    if (dyn_cells_.size() < bytes) {  // stale cells name an earlier block
      dyn_cells_.resize(bytes);
      dyn_settled_.resize(bytes);
    }
    dyn_copy_.assign(smem, smem + bytes);
    // Bytes until the kernel declares its element type (dynamic_shared_elem).
    add_region(Region{smem, smem + bytes, dyn_cells_.data(), Kind::dynamic_shared, 0, nullptr, 0,
                      dyn_copy_.data(), dyn_settled_.data()});
  }
}

void AccessShadow::dynamic_shared_elem(std::size_t elem) {
  if (dyn_accessed_) return;  // cells already recorded at the width in force: keep it
  for (std::size_t i = n_global_; i < regions_.size(); ++i) {
    Region& r = regions_[i];
    if (r.kind != Kind::dynamic_shared) continue;
    const unsigned shift = shift_for(elem);  // the smallest type declared
    if (!dyn_declared_ || shift < r.shift) r.shift = shift;
  }
  forget_hint();  // its copy of the width
  dyn_declared_ = true;
}

void AccessShadow::end_block() {
  replay_reads();
  drop_regions(n_global_);
  dyn_declared_ = false;
}

void AccessShadow::settle_stores() {
  for (const PendingStore& p : pending_)
    if (std::memcmp(p.at, p.before, p.size) != 0) findings_[p.finding].differs = true;
  pending_.clear();
}

void AccessShadow::replay_reads() {
  settle_stores();
  store_landed_ = true;  // what this finds changed is stored already
  for (const LoggedRead& l : reads_) {
    const Region& r = regions_[l.region];
    if (std::memcmp(r.lo + l.offset, l.bytes, l.size) == 0) continue;
    for (std::size_t cell = l.offset >> r.shift; cell <= (l.offset + l.size - 1) >> r.shift; ++cell)
      unchecked_store(r, cell, l.who);
  }
  reads_.clear();
  for (std::size_t i = n_global_; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    const auto n = static_cast<std::size_t>(r.hi - r.lo);
    // By 64-byte pieces (whole elements: they are at most 8 bytes), most of which are unchanged or
    // hold only elements a checked write of this phase explains.
    constexpr std::size_t kPiece = 64;
    const std::size_t width = std::size_t{1} << r.shift;
    for (std::size_t at = 0; at < n; at += kPiece) {
      const std::size_t piece = std::min(kPiece, n - at);
      if (std::memcmp(r.copy + at, r.lo + at, piece) == 0) continue;
      for (std::size_t off = at; off < at + piece; off += width) {
        const std::size_t size = std::min(width, n - off);
        if (same_bytes(r.copy + off, r.lo + off, size)) continue;
        const std::size_t cell = off >> r.shift;
        const Cell& c = r.cells[cell];
        // The reader of this phase: this block's, the latest phase's (phases only grow in a block).
        const Access& reader = c.r2.block == serial_ && c.r2.phase >= c.r1.phase ? c.r2 : c.r1;
        unchecked_store(r, cell, reader);
      }
      std::memcpy(r.copy + at, r.lo + at, piece);
    }
  }
  store_landed_ = false;
}

[[gnu::always_inline]] inline void AccessShadow::check(const Region& r, std::size_t cell, bool write,
                                                       const Access& me) {
  Cell& c = r.cells[cell];
  const std::size_t off = cell << r.shift;  // its first byte, for the report
  const bool global = r.kind == Kind::global;
  const std::uint16_t my_thread = me.thread & kThreadMask;
  const bool my_atomic = (me.thread & kAtomic) != 0;
  // Shared memory lives for one block; global shadows for one launch.
  const auto live = [&](const Access& x) {
    return x.block != 0 && (global ? x.block >= first_serial_ : x.block == me.block);
  };
  const auto races = [&](const Access& x) {
    if (!live(x)) return false;
    const bool both_atomic = my_atomic && (x.thread & kAtomic) != 0;
    if (x.block != me.block) return !both_atomic;  // other blocks: only global memory gets here
    const std::uint16_t t = x.thread & kThreadMask;
    if (x.phase != me.phase || t == my_thread || both_atomic) return false;
    return !(t / 32 == my_thread / 32 && x.sync != me.sync);  // a warp collective between: ordered
  };
  if (write) {
    if (races(c.w)) {
      if (const int i = note("WAW", r, off, c.w, true, me, true); i >= 0) expect_store(r, off, i);
    } else if (races(c.r1))
      note("WAR", r, off, c.r1, false, me, true);
    else if (races(c.r2))
      note("WAR", r, off, c.r2, false, me, true);
    c.w = me;
    c.r1 = Access{};
    c.r2 = Access{};
    if (r.settled != nullptr) r.settled[cell] = written_word(epoch_);
    return;
  }
  if (!global && !live(c.w)) note("uninit", r, off, me, false, me, false);
  if (races(c.w)) note("RAW", r, off, c.w, true, me, false);
  // Keep up to two readers: a reader of this block's earlier phase, or this thread's own earlier
  // read, gives way; two readers of one block give way to one of another block.
  const auto gives_way = [&](const Access& x) {
    return !live(x) ||
           (x.block == me.block && (x.phase != me.phase || (x.thread & kThreadMask) == my_thread));
  };
  if (gives_way(c.r1))
    c.r1 = me;
  else if (gives_way(c.r2))
    c.r2 = me;
  else if (c.r1.block == c.r2.block && c.r1.block != me.block)
    c.r2 = me;
  if (r.settled != nullptr) {  // read_handled_inline's word
    const auto now = [&](const Access& x) { return x.block == me.block && x.phase == me.phase; };
    const auto thread = [](const Access& x) { return static_cast<std::uint16_t>(x.thread & kThreadMask); };
    const bool written_before = c.w.block == me.block && c.w.phase != me.phase;
    r.settled[cell] = written_before && now(c.r1)
                          ? settled_word(epoch_, thread(c.r1), now(c.r2) ? thread(c.r2) : kNoReader)
                          : 0;
  }
}

void AccessShadow::expect_store(const Region& r, std::size_t off, int finding) {
  Finding& f = findings_[static_cast<std::size_t>(finding)];
  if (f.differs) return;  // real already
  if (store_landed_) {
    f.differs = true;  // the value before it is gone: not known to be the same
    return;
  }
  PendingStore& p = pending_.emplace_back();
  p.at = r.lo + off;
  p.size = static_cast<std::uint32_t>(std::min<std::size_t>(std::size_t{1} << r.shift, r.hi - p.at));
  p.finding = static_cast<std::uint32_t>(finding);
  std::memcpy(p.before, p.at, p.size);
}

void AccessShadow::unchecked_store(const Region& r, std::size_t cell, const Access& reader) {
  if (reader.block != serial_) return;  // nobody of this block read it: a runtime fill, not a store
  const Access& w = r.cells[cell].w;
  if (w.block == reader.block && w.phase == reader.phase) return;  // a checked write of this phase
  check(r, cell, true, reader);
}

void AccessShadow::static_shared(void* p, std::size_t bytes, std::size_t elem) {
  auto* lo = static_cast<unsigned char*>(p);
  for (std::size_t i = n_global_; i < regions_.size(); ++i)
    if (regions_[i].lo == lo) return;  // already watched in this block
  auto it =
      std::find_if(statics_.begin(), statics_.end(), [&](const StaticShadow& s) { return s.addr == p; });
  if (it == statics_.end()) {
    statics_.push_back(StaticShadow{p, bytes, std::vector<Cell>(bytes), std::vector<unsigned char>(bytes),
                                    std::vector<std::uint64_t>(bytes)});
    it = statics_.end() - 1;
  }
  std::memcpy(it->copy.data(), lo, bytes);
  add_region(Region{lo, lo + bytes, it->cells.data(), Kind::static_shared, shift_for(elem), nullptr, 0,
                    it->copy.data(), it->settled.data()});
}

void AccessShadow::mark(const unsigned char* lo, const unsigned char* hi, bool watched) {
  if (hi <= lo) return;
  const auto shadow = [](const unsigned char* p) {
    return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(p) >> 3) + kShadowOffset);
  };
  // Any negative value makes every access to the granule report, whatever its size and offset.
  std::memset(shadow(lo), watched ? 0xF8 : 0, static_cast<std::size_t>(shadow(hi - 1) - shadow(lo)) + 1);
  if (!watched) restore_guarded_shadow(lo, hi);  // memcheck's shadow of the memory, if it has one
}

void AccessShadow::add_region(const Region& r) {
  regions_.push_back(r);
  forget_hint();  // the vector may have moved
  mark(r.lo, r.hi, true);
}

void AccessShadow::drop_regions(std::size_t from) {
  for (std::size_t i = from; i < regions_.size(); ++i) mark(regions_[i].lo, regions_[i].hi, false);
  regions_.resize(from);
  forget_hint();
  // A dropped region may have shared its first or last 8-byte granule with one still watched.
  for (const Region& r : regions_) {
    mark(r.lo, std::min(r.hi, r.lo + 8), true);
    mark(std::max(r.lo, r.hi - 8), r.hi, true);
  }
}

void AccessShadow::next_epoch() {
  if (++epoch_ != 0) return;
  // After 2^32 phases: no word may still hold an epoch that comes round again.
  std::fill(dyn_settled_.begin(), dyn_settled_.end(), 0);
  for (StaticShadow& st : statics_) std::fill(st.settled.begin(), st.settled.end(), 0);
  epoch_ = 1;
  block_epoch_ = 1;  // the running block's words were cleared with the others
}

void AccessShadow::on_access(const void* addr, std::size_t bytes, bool write, const void* pc) {
  if (write)
    access<true>(addr, bytes, pc);
  else
    access<false>(addr, bytes, pc);
}

template <bool kWrite>
[[gnu::noinline]] void AccessShadow::access(const void* addr, std::size_t bytes, const void* pc) {
  if (!pending_.empty()) [[unlikely]]
    settle_stores();  // the store whose hook came last has landed
  const auto* a = static_cast<const unsigned char*>(addr);
  // Regions do not overlap, and a thread's accesses mostly go to the region of its last one.
  Region* hint = hint_;
  if (hint == nullptr || a < hint->lo || a >= hint->hi) [[unlikely]] {
    hint = nullptr;
    for (Region& r : regions_)
      if (a >= r.lo && a < r.hi) hint = &r;
    if (hint == nullptr) return;  // a neighbour sharing an 8-byte granule with a watched region
    set_hint(hint);
  }
  const Region& r = *hint;
  if (r.kind == Kind::dynamic_shared) dyn_accessed_ = true;
  const ThreadRec* t = sched_->current_thread();
  const unsigned thread = t->warp * 32u + t->lane;
  const bool atomic = addr == g_atomic_target && thread == g_atomic_thread;
  Access me;
  record(me, t, static_cast<std::uint16_t>(thread | (atomic ? kAtomic : 0)), pc);
  const std::size_t from = static_cast<std::size_t>(a - r.lo);
  const std::size_t to = std::min(from + bytes, static_cast<std::size_t>(r.hi - r.lo));
  if (r.cells == nullptr) {  // read-only arguments' memory: only its reads of the poison
    if (!kWrite) check_poison_read(r, from, to, me);
    return;
  }
  const std::size_t first = from >> r.shift, last = (to - 1) >> r.shift;
  if (first == last) [[likely]]  // an access within one element: most of them
    check(r, first, kWrite, me);
  else
    for (std::size_t cell = first; cell <= last; ++cell) check(r, cell, kWrite, me);
  if (!kWrite && r.kind == Kind::global) {
    if (poison_ != 0) check_poison_read(r, from, to, me);
    LoggedRead& l = reads_.emplace_back();
    l.region = static_cast<std::uint32_t>(&r - regions_.data());
    l.offset = static_cast<std::uint32_t>(from);
    l.size = static_cast<std::uint32_t>(std::min<std::size_t>(to - from, sizeof l.bytes));
    l.who = me;
    std::memcpy(l.bytes, r.lo + from, l.size);
  }
}

void AccessShadow::check_poison_read(const Region& r, std::size_t from, std::size_t to, const Access& me) {
  if (poison_ == 0) return;
  // Whole elements, and at least a 4-byte word: two bytes of data match the poison by chance once
  // in 65536, four once in 2^32. fill_poison writes the word from the allocation's first byte.
  const std::size_t size = static_cast<std::size_t>(r.hi - r.lo);
  const std::size_t width = std::max<std::size_t>(std::size_t{1} << r.shift, 4);
  const std::size_t lo = from / width * width, hi = std::min((to + width - 1) / width * width, size);
  const auto lo_byte = static_cast<unsigned char>(poison_ & 0xFF),
             hi_byte = static_cast<unsigned char>(poison_ >> 8);
  for (std::size_t i = lo; i < hi; ++i)
    if (r.lo[i] != ((i & 1) == 0 ? lo_byte : hi_byte)) return;
  if (r.cells != nullptr)
    for (std::size_t cell = from >> r.shift; cell <= (to - 1) >> r.shift; ++cell) {
      const Access& w = r.cells[cell].w;
      if (w.block != 0 && w.block >= first_serial_) return;  // the launch wrote the poison's bits itself
    }
  note("uninit", r, (from >> r.shift) << r.shift, me, false, me, false);
}

int AccessShadow::note(const char* kind, const Region& r, std::size_t off, const Access& first,
                       bool first_write, const Access& second, bool second_write) {
  const bool uninit = std::strcmp(kind, "uninit") == 0;
  std::vector<Finding>& into = uninit ? uninit_ : findings_;
  for (std::size_t i = 0; i < into.size(); ++i) {
    const Finding& f = into[i];
    if (std::strcmp(f.kind, kind) == 0 && f.first.pc == first.pc && f.second.pc == second.pc)
      return static_cast<int>(i);
  }
  if (into.size() >= (uninit ? kKept : kRecorded)) {
    more_ += uninit ? 0 : 1;
    return -1;
  }
  Finding f{};
  std::strncpy(f.kind, kind, sizeof f.kind - 1);
  f.region = r.kind;
  f.offset = off;
  f.arg = r.arg;
  if (r.kind == Kind::global && r.arg != nullptr) {
    const auto* arg_base = static_cast<const unsigned char*>(r.arg->ptr);
    f.offset = static_cast<std::size_t>((r.lo + off) - arg_base);  // may wrap: checked in word()
  }
  f.first = first;
  f.second = second;
  f.first_write = first_write;
  f.second_write = second_write;
  into.push_back(f);
  return static_cast<int>(into.size() - 1);
}

std::string AccessShadow::word(const Finding& f) const {
  std::string where;
  switch (f.region) {
    case Kind::dynamic_shared: where = fmt::format("dynamic shared memory byte {}", f.offset); break;
    case Kind::static_shared: where = fmt::format("static shared memory byte {}", f.offset); break;
    case Kind::global: {
      const auto off = static_cast<std::ptrdiff_t>(f.offset);
      where = off >= 0 && f.arg != nullptr
                  ? fmt::format("global memory element {} of argument #{}",
                                off / std::ptrdiff_t(f.arg->elem_size), f.arg->index)
                  : fmt::format("global memory of argument #{}", f.arg != nullptr ? f.arg->index : 0);
      break;
    }
  }
  const auto thread = [&](const Access& a) { return xyz(a.thread & kThreadMask, block_dim_); };
  const auto block = [&](const Access& a) { return xyz(a.block - first_serial_, grid_dim_); };
  if (std::strcmp(f.kind, "uninit") == 0 && f.region == Kind::global)
    return fmt::format(
        "uninit read of {}, which still holds the poison the allocation was filled with (nothing wrote it): "
        "thread {} read at {} [block {}]",
        where, thread(f.second), site_text(f.second.pc), block(f.second));
  if (std::strcmp(f.kind, "uninit") == 0)
    return fmt::format("uninit read of {} no thread of the block wrote: thread {} read at {} [block {}]",
                       where, thread(f.second), site_text(f.second.pc), block(f.second));
  const char* first_verb =
      f.first_write ? ((f.first.thread & kAtomic) != 0 ? "atomically wrote" : "wrote") : "read";
  const char* second_verb =
      f.second_write ? ((f.second.thread & kAtomic) != 0 ? "atomically wrote" : "wrote") : "read";
  const bool benign = std::strcmp(f.kind, "WAW") == 0 && !f.differs;
  if (f.first.block != f.second.block)
    return fmt::format(
        "{}{} race between blocks on {}: thread {} of block {} {} at {}, then thread {} of block {} {}{} at "
        "{}, "
        "without an atomic between them (blocks run at once on a GPU)",
        benign ? "benign " : "", f.kind, where, thread(f.first), block(f.first), first_verb,
        site_text(f.first.pc), thread(f.second), block(f.second), second_verb,
        benign ? " the same value" : "", site_text(f.second.pc));
  return fmt::format(
      "{}{} hazard on {}: thread {} {} at {}, then thread {} {}{} at {}, with no barrier between [block {}]",
      benign ? "benign " : "", f.kind, where, thread(f.first), first_verb, site_text(f.first.pc),
      thread(f.second), second_verb, benign ? " the same value" : "", site_text(f.second.pc),
      block(f.second));
}

}  // namespace simt::detail
