// Splits [0, n) into contiguous chunks run on std::threads. Each index is handled by exactly
// one thread with the caller's own loop, so results never depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace ds {

// The threads parallel loops may use: DRIFTSCOPE_THREADS (read once) if set, else the cores;
// set_worker_threads() overrides both.
int configured_threads();
// Threads used for work worth more than `min_work` (multiply-adds); 1 below it, else
// configured_threads().
int worker_count(std::int64_t work, std::int64_t min_work = std::int64_t(1) << 20);
// Overrides the thread count (0 restores the default); for tests and callers that share cores.
void set_worker_threads(int n);
void parallel_for(std::int64_t n, std::int64_t work,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace ds
