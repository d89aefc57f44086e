// Hazard test kernels for the access-hooked checker: static shared memory, global memory read by
// one block and written by another, and reads of shared memory (and, under a poison, global
// memory) nothing wrote. The `// @` markers name the lines the findings must point at.
#include "simt/simt.h"
#include "simt/simt_fp16.h"

#include "hazard_kernels.h"

namespace simt_test {
namespace {

constexpr int kThreads = 64;

// out[t] = in[t] + the two warps' sums of in, through a static __shared__ array.
__global__ void static_reduce_kernel(const float* in, float* out, int skip_barrier) {
  __shared__ float partial[2];
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  float v = in[t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) partial[warp] = v;  // @static-write
  if (!skip_barrier) __syncthreads();
  out[t] = in[t] + partial[0] + partial[1];  // @static-read
}

// Block b (thread 0) writes out[b], then reads out[b + 1], which another block writes: on a GPU
// the blocks run at once and the read sees either value.
__global__ void neighbour_kernel(const float* in, float* out, int own) {
  if (threadIdx.x != 0) return;
  const int b = static_cast<int>(blockIdx.x), n = static_cast<int>(gridDim.x);
  out[b] = in[b];  // @neighbour-write
  const int other = own != 0 ? b : (b + 1) % n;
  out[n + b] = out[other] * 2.0f;  // @neighbour-read
}

// Thread 0 of block 0 adds into out[0] atomically; thread 0 of block 1 reads out[0] with a plain
// load: a race however atomic the add (the same thread index and address as the last atomic, in
// another block, must not pass for one).
__global__ void plain_read_of_atomic_kernel(const float* in, float* out) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0)
    atomicAdd(&out[0], in[0]);  // @atomic-write
  else
    out[1] = out[0];  // @plain-read-of-atomic
}

// out[t] = slot[t] after only threads 0..31 staged their slot: half the reads see no write.
__global__ void uninit_dynamic_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, slot);
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) slot[t] = in[t];
  __syncthreads();
  out[t] = slot[t];  // @uninit-dynamic-read
}

__global__ void uninit_static_kernel(const float* in, float* out) {
  __shared__ float slot[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) slot[t] = in[t];
  __syncthreads();
  out[t] = slot[t];  // @uninit-static-read
}

// The same through __half slots: the load is a __half copy the half header's code makes, inlined
// here, and the report names this line, not the header's.
__global__ void uninit_static_half_kernel(const float* in, float* out) {
  __shared__ __half slot[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) slot[t] = __float2half(in[t]);
  __syncthreads();
  out[t] = __half2float(slot[t]);  // @uninit-half-read
}

// out[t] = in[t] + in[t ^ 32] through slot t % 32: threads t and t + 32 both `slot += ` with no
// barrier between, a lost update on a GPU. The instrumentation checks the load of `+=`, not its
// store.
__global__ void shared_plus_equals_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, slot);
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) slot[t] = 0.0f;
  __syncthreads();
  slot[t % 32] += in[t];  // @shared-plus-equals
  __syncthreads();
  out[t] = slot[t % 32];
}

// Every thread reads s[0], which the barrier before made visible; then thread `writer` stores into
// it with no barrier between: a WAR with the threads that read before it, a RAW with those after.
// The checker answers most of those reads from the element's settled word (access_shadow.h's
// read_changes_nothing), the writer's among them: its write must still be checked against the
// two readers the cell keeps. `slot` is 0: an index the compiler cannot prove equal to the read's,
// so that the store is checked where it is made (a store to an address checked earlier in the
// function is not, and is found at the barrier instead, blamed on a reader).
__global__ void broadcast_then_write_kernel(const float* in, float* out, int writer, int slot) {
  SIMT_DYNAMIC_SHARED(float, s);
  const int t = static_cast<int>(threadIdx.x);
  s[t] = in[t];
  __syncthreads();
  const float v = s[0];                 // @broadcast-read
  if (t == writer) s[slot] = v + 1.0f;  // @reader-write
  out[t] = v;
}

// Two blocks: block 0 fills its shared memory and reads none of it; block 1 writes its last slot
// only, then reads them all (what the others hold is block 0's). The checker's word for each
// element then says "written, not accessed since" of block 0's stores: block 1's reads, made
// after its own store had the checker look at this memory, must not take them for its own.
__global__ void uninit_after_other_block_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, s);
  const int t = static_cast<int>(threadIdx.x);
  if (blockIdx.x == 0 || t == kThreads - 1) s[t] = in[t];
  __syncthreads();
  if (blockIdx.x == 1) out[t] = s[t];  // @uninit-other-block-read
}

// Threads 0 and 1 read s[0]; after a __syncwarp thread 1 reads it again and thread 2 stores into
// it: a WAR between the second read and the store, which the __syncwarp does not order. The
// checker must keep thread 1's second read (its warp's collectives since), not its first.
__global__ void reread_then_write_kernel(const float* in, float* out, int slot) {
  SIMT_DYNAMIC_SHARED(float, s);
  const int t = static_cast<int>(threadIdx.x);
  s[t] = in[t];
  __syncthreads();
  float v = 0.0f;
  if (t < 2) v = s[0];
  __syncwarp();
  if (t == 1) v += s[0];       // @reread
  if (t == 2) s[slot] = 1.0f;  // @write-after-reread
  out[t] = v;
}

// out[t] = the sum of in, by a tree in shared memory with a barrier after every level.
__global__ void shared_tree_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, s);
  const int t = static_cast<int>(threadIdx.x);
  s[t] = in[t];
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  out[t] = s[0];
}

__global__ void read_input_kernel(const float* in, float* out) {
  const int t = static_cast<int>(threadIdx.x);
  out[t] = 2.0f * in[t];  // @global-input-read
}

// Threads below `staged` stage their element in scratch; after the barrier every thread reads one
// back (another thread's, when all staged theirs).
__global__ void read_back_kernel(const float* in, float* scratch, float* out, int staged) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < staged) scratch[t] = in[t];
  __syncthreads();
  out[t] = scratch[staged == kThreads ? kThreads - 1 - t : t];  // @global-read-back
}

}  // namespace

void global_read_kernel(GlobalReadKernel k, const float* in, float* scratch, float* out) {
  const dim3 one(1), block(kThreads);
  switch (k) {
    case GlobalReadKernel::read_input:
      simt::launch(read_input_kernel, one, block, 0, nullptr, in, out);
      break;
    case GlobalReadKernel::read_back_own_write:
      simt::launch(read_back_kernel, one, block, 0, nullptr, in, scratch, out, kThreads);
      break;
    case GlobalReadKernel::read_back_half:
      simt::launch(read_back_kernel, one, block, 0, nullptr, in, scratch, out, kThreads / 2);
      break;
  }
}

void hazard_kernel(HazardKernel k, const float* in, float* out) {
  const dim3 one(1), block(kThreads), four(4);
  switch (k) {
    case HazardKernel::static_shared_ok:
      simt::launch(static_reduce_kernel, one, block, 0, nullptr, in, out, 0);
      break;
    case HazardKernel::static_shared_no_barrier:
      simt::launch(static_reduce_kernel, one, block, 0, nullptr, in, out, 1);
      break;
    case HazardKernel::neighbour_output:
      simt::launch(neighbour_kernel, four, dim3(32), 0, nullptr, in, out, 0);
      break;
    case HazardKernel::own_output:
      simt::launch(neighbour_kernel, four, dim3(32), 0, nullptr, in, out, 1);
      break;
    case HazardKernel::plain_read_of_atomic:
      simt::launch(plain_read_of_atomic_kernel, dim3(2), dim3(32), 0, nullptr, in, out);
      break;
    case HazardKernel::uninit_dynamic_shared:
      simt::launch(uninit_dynamic_kernel, one, block, kThreads * sizeof(float), nullptr, in, out);
      break;
    case HazardKernel::uninit_static_shared:
      simt::launch(uninit_static_kernel, one, block, 0, nullptr, in, out);
      break;
    case HazardKernel::shared_plus_equals:
      simt::launch(shared_plus_equals_kernel, one, block, kThreads * sizeof(float), nullptr, in, out);
      break;
    case HazardKernel::uninit_static_half:
      simt::launch(uninit_static_half_kernel, one, block, 0, nullptr, in, out);
      break;
    case HazardKernel::late_reader_writes:
      simt::launch(broadcast_then_write_kernel, one, block, kThreads * sizeof(float), nullptr, in, out, 40,
                   0);
      break;
    case HazardKernel::uninit_after_other_block:
      simt::launch(uninit_after_other_block_kernel, dim3(2), block, kThreads * sizeof(float), nullptr, in,
                   out);
      break;
    case HazardKernel::reread_then_write:
      simt::launch(reread_then_write_kernel, one, block, kThreads * sizeof(float), nullptr, in, out, 0);
      break;
    case HazardKernel::shared_tree_ok:
      simt::launch(shared_tree_kernel, one, block, kThreads * sizeof(float), nullptr, in, out);
      break;
  }
}

}  // namespace simt_test
