// Race test kernels: each reads in[64] and writes out[64] with one block of 64 threads. The
// `// @` markers name the lines the hazard checker's findings must point at.
#include "simt/simt.h"
#include "simt/simt_fp16.h"

#include "race_kernels.h"

namespace simt_test {
namespace {

constexpr int kThreads = 64;

// out[t] = in[t] + sum of the two warps' partial sums of in.
__global__ void reduce_kernel(const float* in, float* out, int skip_barrier) {
  SIMT_DYNAMIC_SHARED(float, partial);
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  float v = in[t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) partial[warp] = v;  // @reduce-write
  if (!skip_barrier) __syncthreads();
  out[t] = in[t] + partial[0] + partial[1];  // @reduce-read
}

// out[t] = in[t] + the block's sum, as reduce_kernel, but every lane stores its warp's sum: 32
// stores of one value to partial[warp] (the butterfly leaves every lane the same bits), which race
// on a GPU too and leave the same value in any order.
__global__ void warp_sums_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, partial);
  const int t = static_cast<int>(threadIdx.x);
  float v = in[t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  partial[t / 32] = v;  // @warp-sums-write
  __syncthreads();
  out[t] = in[t] + partial[0] + partial[1];
}

// out[t] = in[(t + 1) % 64]: each thread reads its neighbour's slot, then reuses its own for
// something else with no barrier, while the thread before it may not have read it yet.
__global__ void rotate_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, slot);
  const int t = static_cast<int>(threadIdx.x);
  slot[t] = in[t];
  __syncthreads();
  const float next = slot[(t + 1) % kThreads];  // @rotate-read
  out[t] = next;
  slot[t] = -1.0f;  // @rotate-write
}

// out[t] = in[t] * 2 through slot t % 32: each thread reads back its own write at once, so every
// schedule of the runtime gives the same output; on a GPU thread t + 32 may overwrite it first.
__global__ void aliased_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, slot);
  const int t = static_cast<int>(threadIdx.x);
  slot[t % 32] = in[t];  // @aliased-write
  out[t] = slot[t % 32] * 2.0f;
}

// out[t] = in[t ^ 1]: lanes swap through shared memory, ordered by __syncwarp.
__global__ void warp_sync_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, slot);
  const int t = static_cast<int>(threadIdx.x);
  slot[t] = in[t];
  __syncwarp();
  const float v = slot[t ^ 1];
  __syncwarp();
  slot[t] = v;
  out[t] = slot[t];
}

// out[t] = in[t] rounded to half, staged as __half: threads 2k and 2k + 1 write the two halves of
// one 4-byte word, which is no conflict.
__global__ void half_slots_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(__half, slot);
  const int t = static_cast<int>(threadIdx.x);
  slot[t] = __float2half_rn(in[t]);
  out[t] = __half2float(slot[t]);
}

__global__ void add_one_kernel(float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1.0f;
}

// Block b adds in[b] into out[0] (thread 0 only): through a plain += or through atomicAdd.
__global__ void block_sum_kernel(const float* in, float* out, int atomic) {
  if (threadIdx.x != 0) return;
  if (atomic != 0)
    atomicAdd(out, in[blockIdx.x]);
  else
    out[0] += in[blockIdx.x];  // @block-plus-equals
}

// Block b writes out[b] only.
__global__ void block_own_kernel(const float* in, float* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = in[blockIdx.x] * 2.0f;
}

}  // namespace

void cross_block_kernel(CrossBlockKernel k, const float* in, float* out) {
  const dim3 grid(4), block(32);
  switch (k) {
    case CrossBlockKernel::plus_equals:
      simt::launch(block_sum_kernel, grid, block, 0, nullptr, in, out, 0);
      break;
    case CrossBlockKernel::atomic_add:
      simt::launch(block_sum_kernel, grid, block, 0, nullptr, in, out, 1);
      break;
    case CrossBlockKernel::own_elements:
      simt::launch(block_own_kernel, grid, block, 0, nullptr, in, out);
      break;
  }
}

void race_kernel(RaceKernel k, const float* in, float* out) {
  const dim3 grid(1), block(kThreads);
  const std::size_t smem = kThreads * sizeof(float);
  switch (k) {
    case RaceKernel::reduce_ok: simt::launch(reduce_kernel, grid, block, smem, nullptr, in, out, 0); break;
    case RaceKernel::reduce_no_barrier:
      simt::launch(reduce_kernel, grid, block, smem, nullptr, in, out, 1);
      break;
    case RaceKernel::rotate_war: simt::launch(rotate_kernel, grid, block, smem, nullptr, in, out); break;
    case RaceKernel::aliased_slots: simt::launch(aliased_kernel, grid, block, smem, nullptr, in, out); break;
    case RaceKernel::warp_synchronous_ok:
      simt::launch(warp_sync_kernel, grid, block, smem, nullptr, in, out);
      break;
    case RaceKernel::half_slots_ok:
      simt::launch(half_slots_kernel, grid, block, kThreads * sizeof(__half), nullptr, in, out);
      break;
    case RaceKernel::warp_sums_benign:
      simt::launch(warp_sums_kernel, grid, block, smem, nullptr, in, out);
      break;
  }
}

void add_one_in_place(float* x, int n) {
  simt::launch(add_one_kernel, dim3((n + 63) / 64), dim3(64), 0, nullptr, x, n);
}

}  // namespace simt_test
