// Host launchers of the race test kernels (race_kernels.cu): shared-memory patterns with and
// without a race, for the schedule rerun (Config::race_schedules) and the hazard checker.
#pragma once

namespace simt_test {

// Each writes out[0 .. 64) from in[0 .. 64) with one block of 64 threads (two warps).
enum class RaceKernel {
  reduce_ok,            // partials, barrier, reads
  reduce_no_barrier,    // partials read with no barrier after their writes (RAW)
  rotate_war,           // each thread reads its neighbour's slot, then overwrites its own (WAR)
  aliased_slots,        // thread t and t + 32 share a slot, each writes then reads it (WAW)
  warp_synchronous_ok,  // lanes exchange through shared memory ordered by __syncwarp
  half_slots_ok,        // __half elements: neighbours share a 4-byte word, never an element
  warp_sums_benign,     // every lane stores its warp's sum to one slot: a WAW of one value, benign
};

void race_kernel(RaceKernel k, const float* in, float* out);

// Four blocks writing global memory: all into out[0] with a plain += (a lost update on a GPU),
// all into out[0] through atomicAdd, or each into its own out[b].
enum class CrossBlockKernel { plus_equals, atomic_add, own_elements };
void cross_block_kernel(CrossBlockKernel k, const float* in, float* out);
// x[i] += 1 for i < n, in place: correct only if every schedule starts from the same x.
void add_one_in_place(float* x, int n);

}  // namespace simt_test
