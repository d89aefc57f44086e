// Types shared by both backends of the SIMT runtime (nvcc and the CPU fibers).
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

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
  std::uint64_t seed = 0;  // used by Order::random
  // Blocks run concurrently on this many OS threads; 0 (the default): every core
  // (std::thread::hardware_concurrency()). Blocks are independent, so a race-free kernel without
  // cross-block float atomics gives the same bits for any count.
  unsigned host_threads = 0;
  bool strict_barriers = false;  // __syncthreads after some threads exited is an error
  // > 0: every launch runs again under this many other schedules, from the same inputs; an output
  // that differs is a race finding (reported to the race sink; the first schedule's output stays).
  unsigned race_schedules = 0;
  // The shared-memory hazard checker (docs/simt.md): every access to dynamic shared memory is
  // recorded per barrier phase and RAW/WAR/WAW between unordered threads are race findings.
  // x86-64 Linux only; grids then run on one host thread.
  bool racecheck = false;
  // What simt::malloc'd memory and dynamic shared memory are filled with (PoisonPattern):
  // `driftscope verify` runs a candidate under two and calls any output that differs uninitialised.
  unsigned poison = 0;
  // Under a poison, the locals declared without an initializer at this one site (poison_site_id of
  // its "file:line") start as the other poison, every other local as `poison`: verify reruns a
  // stage once per such site its kernels reached, and a site whose other poison changes the
  // output is a local read before it is written (docs/verify.md). 0: no site is singled out.
  std::uint64_t poison_site = 0;
  // Interleaving at memory operations (docs/simt.md "Schedules"): in a kernel built with access
  // hooks (driftscope_add_simt_kernel(... CHECKED)), every load and store of memory a launch
  // writes may suspend its thread (a coin seeded by `seed` and the block) and run another runnable
  // thread of the block first; a suspended load reads the value from before the others ran. A
  // read-modify-write raced by threads of one block then loses updates, as on a GPU. Not while the
  // hazard checker (racecheck) watches the launch; no effect on kernels without hooks.
  bool interleave = false;
  // The memory checker (docs/simt.md "Memcheck"): simt::malloc hands out blocks with red zones
  // and a freed block is quarantined; in a kernel built with access hooks every access to them,
  // to the block's dynamic shared memory and through a null or wild pointer is checked, and the
  // launch stops at the first bad one, a finding (take_memory_findings) instead of a corruption.
  // A double free or a free of a pointer never allocated is a finding too. Needs a process with
  // checked kernels (their access shadow); no effect on kernels without hooks.
  bool memcheck = false;
};

// Config::poison's values. Each is a repeating 16-bit word, so f32, f16 and bf16 views all read
// the same kind of value: 0xFFFF and 0x7FC1 are NaN in all three, 0x4A3D finite in all three.
enum PoisonPattern : unsigned { poison_default = 0, poison_nan = 1, poison_finite = 2 };
inline std::uint16_t poison_word(unsigned pattern) {
  return pattern == poison_nan ? 0x7FC1 : pattern == poison_finite ? 0x4A3D : 0xFFFF;
}
// How a launch's record names a poisoned local's declaration site it reached, among its uninit reads
// (take_uninit_reads): "local `NAME` declared without an initializer at FILE:LINE".
inline constexpr std::string_view local_site_note = "local `";
// How a memcheck finding starts among a launch's uninit reads (take_uninit_reads), where it travels
// to a host: "memcheck: KERNEL: out-of-bounds write of 4 bytes at FILE:LINE, ...".
inline constexpr std::string_view memcheck_note = "memcheck: ";
// How a launch that Config::memcheck could not look into (its kernel has no access hooks: not the
// CHECKED flavour) says so among its uninit reads: "unchecked by memcheck: KERNEL".
inline constexpr std::string_view memcheck_unchecked_note = "unchecked by memcheck: ";
// What a memcheck finding of a read nothing wrote calls it (initcheck): "memcheck: KERNEL:
// uninitialized read of 4 bytes at FILE:LINE, ...". `driftscope verify` classes it `uninit`.
inline constexpr std::string_view memcheck_uninit_note = "uninitialized read";
// How the hazard checker's benign findings start among a launch's uninit reads when the launch has
// no real one (then they are no failure): "racecheck: KERNEL: benign WAW hazard on ... the same value
// ...". Two threads storing the same value race on a GPU too, but either order leaves that value.
inline constexpr std::string_view racecheck_note = "racecheck: ";
// Config::poison_site's name for a declaration site "file:line" (FNV-1a; never 0).
inline std::uint64_t poison_site_id(std::string_view file_line) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : file_line) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

enum class CopyKind : std::uint8_t { host_to_device, device_to_host, device_to_device };

// The name a launch record shows for a kernel's (mangled) symbol: demangled, without its
// parameter list, template arguments kept ("dsk_simt::gemv_kernel<__half const*>"). The CPU runtime and
// the CUPTI recorder both name kernels through this, so simt and cuda records line up.
inline std::string kernel_display_name(const char* symbol) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : symbol;
  std::free(demangled);
  // A template's demangled name starts with its return type, always void for a kernel.
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  // Internal linkage says nothing about which kernel ran; and its parentheses are not parameters.
  for (std::size_t at; (at = name.find("(anonymous namespace)::")) != std::string::npos;) name.erase(at, 23);
  int depth = 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) return name.substr(0, i);
  }
  return name;
}

}  // namespace simt

// A finished launch of the CPU runtime, as handed to an installed launch sink. Plain C: the harness
// installs its sink into the runtime copy linked inside a plugin (found with dlsym), so nothing of
// it may depend on how either side was compiled.
extern "C" {
struct simt_launch_info {
  const char* kernel;  // demangled name without parameters; valid only during the call
  unsigned grid[3];
  unsigned block[3];
  unsigned long long dyn_smem_bytes;
  double seconds;  // wall time of the emulated launch on the CPU (never GPU time)
};
typedef void (*simt_launch_sink)(const struct simt_launch_info* info, void* user);

// A launch whose output depends on the schedule, as handed to an installed race sink (from the
// launching thread, before that launch's simt_launch_info). `message` names the two schedules, the
// kernel argument and its first differing element with both values; valid only during the call.
struct simt_race_info {
  const char* kernel;
  const char* message;
};
typedef void (*simt_race_sink)(const struct simt_race_info* info, void* user);

// The schedule settings of simt::Config in plain C, so a host can set them in the runtime copy
// inside a dlopen'ed library (driftscope_simt_set_options). `size` is sizeof(struct simt_options)
// as the caller knows it: fields past it keep their defaults.
struct simt_options {
  unsigned size;
  unsigned order;  // 0 forward, 1 reverse, 2 random
  unsigned long long seed;
  unsigned host_threads;  // 0: every core
  int strict_barriers;
  unsigned race_schedules;
  int racecheck;
  unsigned poison;                 // Config::poison
  int interleave;                  // Config::interleave
  unsigned long long poison_site;  // Config::poison_site
  int memcheck;                    // Config::memcheck
};
}
