#include "local_sites.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "simt/simt.h"

namespace simt::detail {
namespace {

std::atomic<std::uint64_t> g_poison_site{0};
std::mutex g_sites_mutex;
std::vector<std::string> g_sites;                  // guarded by g_sites_mutex
std::atomic<std::uint64_t> g_sites_generation{1};  // a take starts a new one

struct LastSite {
  const char* name = nullptr;
  const char* file = nullptr;
  int line = 0;
  std::uint64_t generation = 0;  // of the launch record it was noted for
  std::uint64_t id = 0;          // poison_site_id of its "file:line"
};
// Every thread of a block reaches the same declarations: each host thread notes a site once per
// launch record, and names it once, without the lock.
thread_local LastSite tl_last;

}  // namespace

void set_local_poison_site(std::uint64_t site) { g_poison_site.store(site, std::memory_order_relaxed); }

std::uint16_t local_poison_word(const char* name, const char* file, int line) {
  const std::uint16_t word = g_local_poison.load(std::memory_order_relaxed);
  const std::uint64_t generation = g_sites_generation.load(std::memory_order_relaxed);
  if (tl_last.name != name || tl_last.file != file || tl_last.line != line ||
      tl_last.generation != generation) {
    const std::string site = fmt::format("{}:{}", file, line);
    tl_last = {name, file, line, generation, poison_site_id(site)};
    std::string note =
        fmt::format("{}{}` declared without an initializer at {}", local_site_note, name, site);
    std::lock_guard lock(g_sites_mutex);
    if (std::find(g_sites.begin(), g_sites.end(), note) == g_sites.end()) g_sites.push_back(std::move(note));
  }
  const std::uint64_t single = g_poison_site.load(std::memory_order_relaxed);
  if (single == 0 || tl_last.id != single) return word;
  return word == poison_word(poison_nan) ? poison_word(poison_finite) : poison_word(poison_nan);
}

std::vector<std::string> take_local_sites() {
  std::lock_guard lock(g_sites_mutex);
  g_sites_generation.fetch_add(1, std::memory_order_relaxed);
  return std::exchange(g_sites, {});
}

}  // namespace simt::detail
