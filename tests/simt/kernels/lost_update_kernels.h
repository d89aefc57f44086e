// Host launchers of the lost-update test kernels (lost_update_kernels.cu), for the schedule that
// interleaves at memory operations (Config::interleave): read-modify-writes by several threads of
// one block, with and without an atomic (the race-free tree sum is hazard_kernels' shared_tree_ok).
#pragma once

namespace simt_test {

// Each reads in[0 .. 64) and adds it into out[0] with one block of 64 threads (two warps), except
// own_element_plus_equals, which adds in[t] into out[t], and the blocks_ ones, where thread 0 of
// each of 4 blocks of 32 threads adds in[b] (into out[0], or into out[b]). out has 64 elements.
enum class LostUpdateKernel {
  global_plus_equals,          // out[0] += in[t] from every thread: a lost update on a GPU
  static_shared_plus_equals,   // the same into a static __shared__ float, then out[0] = it
  dynamic_shared_plus_equals,  // the same into dynamic shared memory
  global_atomic_add,           // atomicAdd(out, in[t])
  static_shared_atomic_add,    // atomicAdd into a static __shared__ float, then out[0] = it
  warp_sums_atomic_add,        // __shfl_xor_sync sums per warp, then one atomicAdd per warp
  own_element_plus_equals,     // out[t] += in[t]: a read-modify-write no other thread touches
  blocks_plus_equals,          // out[0] += in[b] from every block: the split-K lost update
  blocks_atomic_add,           // atomicAdd(out, in[b]) from every block
  blocks_own_element,          // out[b] += in[b]: each block its own element
};

void lost_update_kernel(LostUpdateKernel k, const float* in, float* out);

}  // namespace simt_test
