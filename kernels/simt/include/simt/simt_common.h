// Types shared by both backends of the SIMT runtime (nvcc and the CPU fibers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace simt {

// Thrown by simt::launch when a kernel misbehaves (divergent barrier, collective
// naming an exited lane, deadlock, bad launch configuration). what() starts with
// "file:line" of the offending call site when one is known.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Order in which the CPU backend runs the threads of a block within one barrier
// phase. Race-free kernels give bitwise-identical output under every order.
enum class Order : std::uint8_t { forward, reverse, random };

struct Config {
  Order order = Order::forward;
  std::uint64_t seed = 0;        // used by Order::random
  unsigned host_threads = 1;     // blocks run concurrently on this many OS threads
  bool strict_barriers = false;  // __syncthreads after some threads exited is an error
};

enum class CopyKind : std::uint8_t { host_to_device, device_to_host, device_to_device };

}  // namespace simt
