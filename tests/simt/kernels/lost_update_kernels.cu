// Lost-update test kernels for the interleaving schedule (lost_update_kernels.h): the plain `+=`
// ones lose updates on a GPU, where the threads of a block run at once; the others do not.
#include "simt/simt.h"

#include "lost_update_kernels.h"

namespace simt_test {
namespace {

constexpr int kThreads = 64;

__global__ void global_plus_equals_kernel(const float* in, float* out) {
  out[0] += in[threadIdx.x];  // @global-plus-equals
}

__global__ void global_atomic_add_kernel(const float* in, float* out) { atomicAdd(out, in[threadIdx.x]); }

__global__ void static_shared_sum_kernel(const float* in, float* out, int atomic) {
  __shared__ float sum;
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) sum = 0.0f;
  __syncthreads();
  if (atomic != 0)
    atomicAdd(&sum, in[t]);
  else
    sum += in[t];  // @static-shared-plus-equals
  __syncthreads();
  if (t == 0) out[0] = sum;
}

__global__ void dynamic_shared_plus_equals_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, sum);
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) sum[0] = 0.0f;
  __syncthreads();
  sum[0] += in[t];  // @dynamic-shared-plus-equals
  __syncthreads();
  if (t == 0) out[0] = sum[0];
}

__global__ void warp_sums_kernel(const float* in, float* out) {
  float v = in[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}

__global__ void own_element_kernel(const float* in, float* out) { out[threadIdx.x] += in[threadIdx.x]; }

// Thread 0 of block b adds in[b] into out[0] (atomic or not) or into out[b].
__global__ void blocks_kernel(const float* in, float* out, int mode) {
  if (threadIdx.x != 0) return;
  const int b = static_cast<int>(blockIdx.x);
  if (mode == 0)
    out[0] += in[b];  // @blocks-plus-equals
  else if (mode == 1)
    atomicAdd(out, in[b]);
  else
    out[b] += in[b];
}

}  // namespace

void lost_update_kernel(LostUpdateKernel k, const float* in, float* out) {
  const dim3 one(1), block(kThreads);
  const std::size_t smem = kThreads * sizeof(float);
  switch (k) {
    case LostUpdateKernel::global_plus_equals:
      simt::launch(global_plus_equals_kernel, one, block, 0, nullptr, in, out);
      break;
    case LostUpdateKernel::static_shared_plus_equals:
      simt::launch(static_shared_sum_kernel, one, block, 0, nullptr, in, out, 0);
      break;
    case LostUpdateKernel::dynamic_shared_plus_equals:
      simt::launch(dynamic_shared_plus_equals_kernel, one, block, smem, nullptr, in, out);
      break;
    case LostUpdateKernel::global_atomic_add:
      simt::launch(global_atomic_add_kernel, one, block, 0, nullptr, in, out);
      break;
    case LostUpdateKernel::static_shared_atomic_add:
      simt::launch(static_shared_sum_kernel, one, block, 0, nullptr, in, out, 1);
      break;
    case LostUpdateKernel::warp_sums_atomic_add:
      simt::launch(warp_sums_kernel, one, block, 0, nullptr, in, out);
      break;
    case LostUpdateKernel::own_element_plus_equals:
      simt::launch(own_element_kernel, one, block, 0, nullptr, in, out);
      break;
    case LostUpdateKernel::blocks_plus_equals:
      simt::launch(blocks_kernel, dim3(4), dim3(32), 0, nullptr, in, out, 0);
      break;
    case LostUpdateKernel::blocks_atomic_add:
      simt::launch(blocks_kernel, dim3(4), dim3(32), 0, nullptr, in, out, 1);
      break;
    case LostUpdateKernel::blocks_own_element:
      simt::launch(blocks_kernel, dim3(4), dim3(32), 0, nullptr, in, out, 2);
      break;
  }
}

}  // namespace simt_test
