#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace ds {

namespace {
std::atomic<int> g_override{0};
}  // namespace

int configured_threads() {
  if (const int o = g_override.load()) return o;
  static const int n = [] {
    if (const char* e = std::getenv("DRIFTSCOPE_THREADS")) {
      const int v = std::atoi(e);
      if (v > 0) return v;
    }
    return std::max(1, int(std::thread::hardware_concurrency()));
  }();
  return n;
}

void set_worker_threads(int n) { g_override.store(n > 0 ? n : 0); }

int worker_count(std::int64_t work, std::int64_t min_work) {
  if (work < min_work) return 1;
  return int(std::min<std::int64_t>(configured_threads(), work / min_work + 1));
}

void parallel_for(std::int64_t n, std::int64_t work,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  const int threads = int(std::min<std::int64_t>(worker_count(work), n));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::int64_t chunk = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    const std::int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(body, b, e);
  }
  body(0, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace ds
