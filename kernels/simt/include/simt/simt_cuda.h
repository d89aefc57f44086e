// The CUDA front end of the SIMT CPU runtime: what a .cu written for nvcc, unmodified, needs on
// the CPU beyond simt/simt.h. driftscope_add_simt_kernel() includes it first in the C++ file it
// generates from each .cu (tools/cuda_rewrite.h), which also turns kernel<<<...>>>(...) into a
// Chevron launch and extern __shared__ arrays into the block's dynamic shared memory.
//   - the host API (cuda_host_api.h): cudaMalloc, cudaMemcpy, ... on host memory;
//   - cooperative groups (cooperative_groups.h), half and bfloat16 (simt_fp16.h);
//   - the launch that <<<>>> becomes.
#pragma once

#if defined(__CUDACC__)
#error "simt/simt_cuda.h is the SIMT CPU runtime's front end; nvcc compiles the .cu itself"
#endif

#include "simt/simt.h"
#include "simt/simt_fp16.h"

#include <tuple>
#include <type_traits>
#include <utility>

#include "simt/cooperative_groups.h"
#include "simt/cuda_host_api.h"

// A kernel file's own `main` (its benchmark or self-test) becomes a file-local function nobody
// calls: the plugin or test program linking the file has its own, and two files of one library
// may each have one. Calling main is ill-formed C++, so nothing else changes.
#define main __attribute__((unused)) static simt_kernel_file_main

// assert(e) in a .cu, as the rewrite spells it: a failed one in a kernel stops the launch with a
// simt::KernelError naming the condition, its file:line and the thread (a GPU's device assert
// stops the kernel and prints that line); on the host it fails as the C library's does. Inside the
// file's own `assert`, so NDEBUG as the file sees it where it includes <cassert> turns it off, as
// it turns both off under nvcc.
#define SIMT_ASSERT(...)                                                                                      \
  assert((static_cast<bool>(__VA_ARGS__) ||                                                                 \
          (::simt::detail::assert_failed(#__VA_ARGS__, __FILE__, __LINE__, __func__), false)))

// An expression that does not compile, with `message`: what the rewrite puts in place of a
// construct the runtime cannot take, so the error names it at the author's line.
#define SIMT_UNSUPPORTED(message) ([]<class SimtT = void>() { static_assert(sizeof(SimtT) == 0, message); }())

namespace simt::detail {

// kernel<<<grid, block, smem, stream>>>(args...), as the rewrite spells it:
//   Chevron(SIMT_SITE, grid, block, smem, stream).args(args...)(kernel)
// The arguments come before the kernel so that a kernel template can deduce its template arguments
// from their types, as nvcc does. The launch runs the grid before it returns (streams are ignored);
// a kernel fault throws simt::KernelError from this line, where a GPU would report it at the next
// synchronising call.
#if SIMT_ACCESS_HOOKS
inline namespace access_hooked {  // as simt::launch (simt_cpu.h): one instance per flavour
#endif
template <class... Args>
class ChevronCall {
 public:
  ChevronCall(dim3 grid, dim3 block, std::size_t smem, std::tuple<Args&&...> args)
      : grid_(grid), block_(block), smem_(smem), args_(std::move(args)) {}

  template <class... KArgs>
  void operator()(void (*kernel)(KArgs...)) && {
    static_assert(sizeof...(KArgs) == sizeof...(Args),
                  "kernel<<<...>>>(args): the argument count differs from the "
                  "kernel's parameter count");
    launch_with(kernel);
  }
  // A kernel template whose template arguments are deduced from the launch arguments' types.
  void operator()(void (*kernel)(std::decay_t<Args>...)) && { launch_with(kernel); }

 private:
  template <class... KArgs>
  void launch_with(void (*kernel)(KArgs...)) {
    std::apply(
        [&](auto&&... a) {
          ::simt::launch(kernel, grid_, block_, smem_, nullptr, std::forward<decltype(a)>(a)...);
        },
        args_);
  }
  dim3 grid_, block_;
  std::size_t smem_;
  std::tuple<Args&&...> args_;
};
#if SIMT_ACCESS_HOOKS
}  // namespace access_hooked
#endif

class Chevron {
 public:
  Chevron(Site, dim3 grid, dim3 block, std::size_t smem = 0) : grid_(grid), block_(block), smem_(smem) {}
  template <class Stream>
  Chevron(Site, dim3 grid, dim3 block, std::size_t smem, Stream&&)
      : grid_(grid), block_(block), smem_(smem) {}

  template <class... Args>
  ChevronCall<Args...> args(Args&&... a) && {
    return ChevronCall<Args...>(grid_, block_, smem_, std::forward_as_tuple(std::forward<Args>(a)...));
  }

 private:
  dim3 grid_, block_;
  std::size_t smem_;
};

}  // namespace simt::detail
