#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simt/simt.h"

namespace simt_test {

// Line number of the first line in tests/simt/kernels/<file> that contains marker.
int line_of(const std::string& file, const std::string& marker);

std::vector<float> random_floats(std::size_t n, std::uint32_t seed);

struct Schedule {
  simt::Order order;
  std::uint64_t seed;
  unsigned host_threads;
  std::string name() const;
};

// forward, reverse, random x2 with 1 host thread; forward and random with 2.
std::vector<Schedule> all_schedules();

inline simt::Config to_config(const Schedule& s) {
  simt::Config c;
  c.order = s.order;
  c.seed = s.seed;
  c.host_threads = s.host_threads;
  return c;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b);

// What the simt::KernelError `fn` throws says, or "<no KernelError>".
std::string error_of(const std::function<void()>& fn);

// Collects what the runtime reports to the race sink while it lives.
class RaceFindings {
 public:
  RaceFindings() { driftscope_simt_set_race_sink(&collect, this); }
  ~RaceFindings() { driftscope_simt_set_race_sink(nullptr, nullptr); }
  RaceFindings(const RaceFindings&) = delete;
  RaceFindings& operator=(const RaceFindings&) = delete;
  std::vector<std::string> messages;

 private:
  static void collect(const simt_race_info* info, void* user) {
    static_cast<RaceFindings*>(user)->messages.emplace_back(info->message);
  }
};

}  // namespace simt_test
