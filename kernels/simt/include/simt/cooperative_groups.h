// The cooperative-groups subset of the SIMT CPU runtime, under nvcc's names (namespace
// cooperative_groups): the thread block, tiles of 1-32 threads with their shuffles, votes and
// sync, and cg::reduce. Reached through <cooperative_groups.h> in a kernel built by
// driftscope_add_simt_kernel() (simt/cuda_compat/ stands in for the toolkit's header on the CPU).
// Every collective takes its call site as a defaulted std::source_location, so diagnostics and
// the hazard checker name the kernel's line, not this header's.
#pragma once

#include "simt/simt.h"

#if defined(__CUDACC__)
#error "simt/cooperative_groups.h is the CPU runtime's; under nvcc include <cooperative_groups.h>"
#endif

#include <source_location>
#include <type_traits>

namespace simt::detail {
inline Site site_of(const std::source_location& loc) {
  return Site{loc.file_name(), static_cast<int>(loc.line())};
}
inline unsigned block_thread_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
template <class T>
inline constexpr bool dependent_false = false;
}  // namespace simt::detail

namespace cooperative_groups {

class thread_block {
 public:
  void sync(std::source_location loc = std::source_location::current()) const {
    ::simt::detail::barrier(::simt::detail::site_of(loc), 0);
  }
  unsigned thread_rank() const { return ::simt::detail::block_thread_rank(); }
  unsigned size() const { return ::simt::detail::block_size(); }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};

inline thread_block this_thread_block() { return {}; }

// A tile of N consecutive threads of the block (N a power of two up to a warp). ParentT only
// records what it was partitioned from, as nvcc's type does; tiles of any parent convert.
template <unsigned N, class ParentT = void>
class thread_block_tile {
  static_assert(
      N >= 1 && N <= 32 && (N & (N - 1)) == 0,
      "cooperative_groups::thread_block_tile<N>: the SIMT runtime supports tiles of 1, 2, 4, 8, 16 or "
      "32 threads (larger tiles, which span warps, are not supported)");

 public:
  thread_block_tile() = default;
  template <class OtherParent>
  thread_block_tile(const thread_block_tile<N, OtherParent>&) {}  // NOLINT: nvcc's tiles convert too

  unsigned thread_rank() const { return ::simt::detail::block_thread_rank() % N; }
  static constexpr unsigned size() { return N; }
  static constexpr unsigned num_threads() { return N; }
  unsigned meta_group_rank() const { return ::simt::detail::block_thread_rank() / N; }
  unsigned meta_group_size() const { return (::simt::detail::block_size() + N - 1) / N; }

  void sync(std::source_location loc = std::source_location::current()) const {
    ::simt::detail::syncwarp(::simt::detail::site_of(loc), mask());
  }
  template <class T>
  T shfl(T v, int src_rank, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::shfl_idx(::simt::detail::site_of(loc), mask(), v, src_rank, static_cast<int>(N));
  }
  template <class T>
  T shfl_down(T v, unsigned delta, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::shfl_down(::simt::detail::site_of(loc), mask(), v, delta, static_cast<int>(N));
  }
  template <class T>
  T shfl_up(T v, unsigned delta, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::shfl_up(::simt::detail::site_of(loc), mask(), v, delta, static_cast<int>(N));
  }
  template <class T>
  T shfl_xor(T v, unsigned lane_mask, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::shfl_xor(::simt::detail::site_of(loc), mask(), v, static_cast<int>(lane_mask),
                                    static_cast<int>(N));
  }
  // Bit i: the tile's thread of rank i.
  unsigned ballot(int pred, std::source_location loc = std::source_location::current()) const {
    const unsigned bits =
        ::simt::detail::vote(::simt::detail::site_of(loc), ::simt::detail::Coll::ballot, mask(), pred);
    return N == 32 ? bits : (bits >> first_lane()) & ((1u << N) - 1u);
  }
  bool any(int pred, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::vote(::simt::detail::site_of(loc), ::simt::detail::Coll::any, mask(), pred) != 0;
  }
  bool all(int pred, std::source_location loc = std::source_location::current()) const {
    return ::simt::detail::vote(::simt::detail::site_of(loc), ::simt::detail::Coll::all, mask(), pred) != 0;
  }

 private:
  // This tile's lanes within its warp, less the lanes past the end of the block.
  static unsigned first_lane() { return (::simt::detail::block_thread_rank() % 32) / N * N; }
  static unsigned mask() {
    const unsigned tile = N == 32 ? 0xffffffffu : ((1u << N) - 1u) << first_lane();
    const unsigned warp_base = ::simt::detail::block_thread_rank() / 32 * 32;
    const unsigned left = ::simt::detail::block_size() - warp_base, lanes = left < 32u ? left : 32u;
    return lanes == 32 ? tile : tile & ((1u << lanes) - 1u);
  }
};

template <unsigned N, class ParentT>
thread_block_tile<N, ParentT> tiled_partition(const ParentT&) {
  return {};
}

// Not in the subset: each is a compile-time error naming itself where it is used (the group
// types exist so that `auto g = cg::this_grid();` fails with that message alone).
struct grid_group {};
struct cluster_group {};
struct coalesced_group {};
struct thread_group {};
template <class ParentT>
thread_group tiled_partition(const ParentT&, unsigned) {
  static_assert(::simt::detail::dependent_false<ParentT>,
                "cooperative_groups::tiled_partition(parent, n) with a run-time size is not supported by the "
                "SIMT runtime: use tiled_partition<N>(parent)");
  return {};
}
template <class T = void>
grid_group this_grid() {
  static_assert(
      ::simt::detail::dependent_false<T>,
      "cooperative_groups::this_grid (grid-wide sync) is not supported by the SIMT runtime: blocks run "
      "one after another on the CPU");
  return {};
}
template <class T = void>
cluster_group this_cluster() {
  static_assert(
      ::simt::detail::dependent_false<T>,
      "cooperative_groups::this_cluster (thread block clusters) is not supported by the SIMT runtime");
  return {};
}
template <class T = void>
coalesced_group coalesced_threads() {
  static_assert(::simt::detail::dependent_false<T>,
                "cooperative_groups::coalesced_threads is not supported by the SIMT runtime: use "
                "tiled_partition<N>");
  return {};
}

template <class Group>
void sync(const Group& g, std::source_location loc = std::source_location::current()) {
  g.sync(loc);
}

// The reduction operators of <cooperative_groups/reduce.h>. less and greater pick the smaller
// and the larger value, as nvcc's do inside cg::reduce.
template <class T>
struct plus {
  T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T>
struct less {
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

// Every thread of the tile gets op over the tile's values (an xor butterfly of log2(N) shuffles).
template <unsigned N, class ParentT, class T, class Op>
T reduce(const thread_block_tile<N, ParentT>& tile, T value, Op op,
         std::source_location loc = std::source_location::current()) {
  for (unsigned offset = N / 2; offset > 0; offset /= 2) value = op(value, tile.shfl_xor(value, offset, loc));
  return value;
}
template <class ParentT, class T, class Op>
T reduce(const ParentT&, T, Op) {
  static_assert(::simt::detail::dependent_false<ParentT>,
                "cooperative_groups::reduce: the SIMT runtime reduces over a thread_block_tile<N> only "
                "(tiled_partition<N>(block)), not a whole thread_block");
  return {};
}

}  // namespace cooperative_groups
