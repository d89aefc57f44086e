#include "test_support.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace simt_test {

int line_of(const std::string& file, const std::string& marker) {
  std::ifstream in(fmt::format("{}/{}", SIMT_TEST_KERNEL_DIR, file));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  throw std::runtime_error(fmt::format("marker {} not found in {}", marker, file));
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

std::string Schedule::name() const {
  const char* o = order == simt::Order::forward   ? "forward"
                  : order == simt::Order::reverse ? "reverse"
                                                  : "random";
  return fmt::format("{}(seed {}) x{} host threads", o, seed, host_threads);
}

std::vector<Schedule> all_schedules() {
  return {{simt::Order::forward, 0, 1}, {simt::Order::reverse, 0, 1}, {simt::Order::random, 1, 1},
          {simt::Order::random, 2, 1},  {simt::Order::forward, 0, 2}, {simt::Order::random, 3, 2}};
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const simt::KernelError& e) {
    return e.what();
  }
  return "<no KernelError>";
}

}  // namespace simt_test
