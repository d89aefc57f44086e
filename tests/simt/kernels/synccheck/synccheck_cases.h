// Host entry points of the synccheck and racecheck-severity test kernels (one .cu per case, written
// for nvcc as kernels are found in the wild: cudaMalloc, <<<>>>, cudaFree). Each runs its kernel
// once on device memory of its own and returns what the kernel wrote back. The planted variant of
// each stops its launch (simt::KernelError) where the runtime reports it; `clean` runs the twin.
#pragma once

#include <vector>

namespace synccheck_cases {

// out[t] = in[(t + 1) % 32] for the 32 threads of a 64-thread block that have an element, staged
// through shared memory. Planted: the 32 without an element return before the __syncthreads.
std::vector<float> barrier_after_return(bool clean);
// A 64-thread block reverses its indices through shared memory. Planted: the first warp waits at a
// __syncthreads, the second at a cooperative-groups block.sync() on another line.
std::vector<float> two_barriers(bool clean);
// Each warp of a 48-thread block broadcasts its lane 0's value. Planted: the second warp, which has
// 16 lanes, names all 32 in its __shfl_sync mask.
std::vector<float> shuffle_mask_past_block_end(bool clean);
// Neighbouring lanes swap values with __shfl_xor_sync(0xffffffff, ...). Planted: lane 0 has no
// element and returns first.
std::vector<float> shuffle_mask_exited_lane(bool clean);
// The lower half-warp takes lane 0's value; the upper half goes on to a __syncthreads. Planted: the
// lower half's __shfl_sync mask names all 32 lanes, half of which never come (inactive lanes).
std::vector<float> shuffle_mask_inactive_lanes(bool clean);
// Each half-warp exchanges through shared memory, ordered by __syncwarp. Planted: the upper half
// calls __syncwarp with the lower half's mask, which does not name it.
std::vector<float> syncwarp_mask_without_caller(bool clean);
// A 64-thread block sums its input: a warp reduction, every lane storing its warp's sum to
// partial[warp] (the same value 32 times: benign), then the last thread adds the two partials.
// `barrier`: a __syncthreads before that read; without it the read races with the other warp's
// stores (RAW).
std::vector<float> warp_sums(bool barrier);

}  // namespace synccheck_cases
