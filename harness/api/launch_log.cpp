#include "launch_log.h"

#include <mutex>
#include <utility>

namespace ds::launch_log {
namespace {

std::mutex g_mutex;
std::vector<LaunchRecord> g_records;
std::vector<std::function<void()>> g_flushers;
std::vector<LiveAllocation> g_live;

}  // namespace

void record(LaunchRecord r) {
  std::lock_guard lock(g_mutex);
  g_records.push_back(std::move(r));
}

void add_flusher(std::function<void()> flush) {
  std::lock_guard lock(g_mutex);
  g_flushers.push_back(std::move(flush));
}

void amend_last(LaunchRecord late) {
  std::lock_guard lock(g_mutex);
  if (g_records.empty()) {
    g_records.push_back(std::move(late));
    return;
  }
  LaunchRecord& last = g_records.back();
  using Messages = std::vector<std::string> LaunchRecord::*;
  for (const Messages field : {&LaunchRecord::uninit, &LaunchRecord::local_sites, &LaunchRecord::memory})
    for (std::string& m : late.*field) (last.*field).push_back(std::move(m));
}

std::vector<LaunchRecord> take() {
  std::vector<std::function<void()>> flushers;
  {
    std::lock_guard lock(g_mutex);
    flushers = g_flushers;
  }
  for (const auto& f : flushers) f();  // outside the lock: a flusher calls record()
  std::lock_guard lock(g_mutex);
  return std::exchange(g_records, {});
}

void set_live_allocations(std::vector<LiveAllocation> live) {
  std::lock_guard lock(g_mutex);
  g_live = std::move(live);
}

std::vector<LiveAllocation> live_allocations() {
  std::lock_guard lock(g_mutex);
  return g_live;
}

std::string race_note(std::size_t launch_index, const std::string& kernel_step, const LaunchRecord& l) {
  return "race in launch " + std::to_string(launch_index) + " of step " + kernel_step + ": " + l.race;
}

std::string memory_note(std::size_t launch_index, const std::string& kernel_step, const LaunchRecord& l) {
  std::string findings;
  for (const std::string& m : l.memory) findings += (findings.empty() ? "" : "; ") + m;
  return "memory error in launch " + std::to_string(launch_index) + " of step " + kernel_step + ": " +
         findings;
}

}  // namespace ds::launch_log
