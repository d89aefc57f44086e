// Kernels as written for nvcc, with no Driftscope header: driftscope_add_simt_kernel() builds this
// file for the CPU through its CUDA front end and nvcc builds it as it is (standard_cuda.h).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "standard_cuda.h"

namespace cg = cooperative_groups;

namespace std_cuda {
namespace {

#define CHECK_CUDA(call)                                                  \
  do {                                                                    \
    cudaError_t err_ = (call);                                            \
    if (err_ != cudaSuccess) throw std::string(cudaGetErrorString(err_)); \
  } while (0)

__global__ void __launch_bounds__(256)
    block_sum_kernel(const float* __restrict__ x, float* per_block, float* total, int* blocks_done) {
  extern __shared__ __align__(16) float warp_sums[];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4 v = __ldcs(x4 + blockIdx.x * block.size() + block.thread_rank());
  float s = (v.x + v.y) + (v.z + v.w);
  for (int offset = warp.size() / 2; offset > 0; offset /= 2) s += warp.shfl_down(s, offset);
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = s;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    const unsigned n_warps = (block.size() + 31) / 32;
    float w = warp.thread_rank() < n_warps ? warp_sums[warp.thread_rank()] : 0.0f;
    w = cg::reduce(warp, w, cg::plus<float>());
    if (warp.thread_rank() == 0) {
      __stcs(per_block + blockIdx.x, w);
      atomicAdd(total, w);
      atomicAdd(blocks_done, 1);
    }
  }
}

template <int TILE>
__global__ void tile_ops_kernel(const float* x, float* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
  const float v = __ldg(x + block.thread_rank());
  float* o = out + 8 * block.thread_rank();
  o[0] = cg::reduce(tile, v, cg::less<float>());
  o[1] = cg::reduce(tile, v, cg::greater<float>());
  o[2] = tile.shfl_xor(v, 1);
  o[3] = tile.shfl(v, 0);
  tile.sync();
  o[4] = static_cast<float>(tile.ballot(static_cast<int>(v) % 2 != 0));
  o[5] = static_cast<float>(tile.thread_rank());
  o[6] = static_cast<float>(tile.meta_group_rank());
  o[7] = static_cast<float>(tile.size());
}

template <typename T>
__global__ void scale_kernel(const T* x, T s, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __stcs(y + i, __ldcg(x + i) * s);
}

__global__ void half_pairs_kernel(const float2* x, float* out, int pairs) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  const float2 p = x[i];
  const half2 h = __floats2half2_rn(p.x, p.y);
  const half2 swapped = make_half2(__float2half(p.y), __float2half(p.x));
  const half2 sum = __hadd2(h, swapped);
  const half2 prod = __hmul2(h, swapped);
  const __nv_bfloat162 b = __floats2bfloat162_rn(p.x, p.y);
  out[3 * i] = __low2float(sum);
  out[3 * i + 1] = __half2float(__high2half(prod));
  out[3 * i + 2] = __low2float(b) + __high2float(b);
}

__global__ void racy_tree_kernel(const float* x, float* out) {
  extern __shared__ float partial[];
  const int tid = threadIdx.x;
  partial[tid] = x[tid];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid <= stride && tid + stride < static_cast<int>(blockDim.x)) partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[0] = partial[0];
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, host.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> host_copy(const T* d, std::size_t n) {
  std::vector<T> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

BlockSums block_sums(const std::vector<float>& x, int blocks, int threads) {
  float* d_x = device_copy(x);
  float *d_per_block = nullptr, *d_total = nullptr;
  int* d_done = nullptr;
  CHECK_CUDA(cudaMalloc(&d_per_block, blocks * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_total, sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_done, sizeof(int)));
  CHECK_CUDA(cudaMemset(d_total, 0, sizeof(float)));
  CHECK_CUDA(cudaMemset(d_done, 0, sizeof(int)));
  const int smem = (threads + 31) / 32 * sizeof(float);
  CHECK_CUDA(cudaFuncSetAttribute(block_sum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  block_sum_kernel<<<blocks, threads, smem>>>(d_x, d_per_block, d_total, d_done);
  BlockSums r;
  r.last_error = cudaGetErrorString(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  r.per_block = host_copy(d_per_block, blocks);
  r.total = host_copy(d_total, 1)[0];
  r.blocks_done = host_copy(d_done, 1)[0];
  for (void* p : {static_cast<void*>(d_x), static_cast<void*>(d_per_block), static_cast<void*>(d_total),
                  static_cast<void*>(d_done)})
    CHECK_CUDA(cudaFree(p));
  return r;
}

std::vector<float> tile_ops(const std::vector<float>& x, int tile) {
  float* d_x = device_copy(x);
  float* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, 8 * x.size() * sizeof(float)));
  const unsigned threads = static_cast<unsigned>(x.size());
  if (tile == 8)
    tile_ops_kernel<8><<<1, threads>>>(d_x, d_out);
  else if (tile == 16)
    tile_ops_kernel<16><<<1, threads>>>(d_x, d_out);
  else
    tile_ops_kernel<32><<<dim3(1), dim3(threads), 0, 0>>>(d_x, d_out);
  std::vector<float> out = host_copy(d_out, 8 * x.size());
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_out));
  return out;
}

std::vector<float> scale_deduced(const std::vector<float>& x, float s) {
  const float* d_x = device_copy(x);
  float* d_y = nullptr;
  const int n = static_cast<int>(x.size());
  CHECK_CUDA(cudaMalloc(&d_y, x.size() * sizeof(float)));
  cudaStream_t stream = nullptr;
  scale_kernel<<<(n + 63) / 64, 64, 0, stream>>>(
      d_x, s, d_y, n);  // a launch over lines: the lines after it keep their numbers
  std::vector<float> y = host_copy(d_y, x.size());
  CHECK_CUDA(cudaFree(const_cast<float*>(d_x)));
  CHECK_CUDA(cudaFree(d_y));
  return y;
}

std::vector<float> half_pairs(const std::vector<float>& x) {
  const int pairs = static_cast<int>(x.size() / 2);
  float* d_x = device_copy(x);
  float* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, 3 * pairs * sizeof(float)));
  half_pairs_kernel<<<(pairs + 31) / 32, 32>>>(reinterpret_cast<const float2*>(d_x), d_out, pairs);
  std::vector<float> out = host_copy(d_out, 3 * pairs);
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_out));
  return out;
}

void racy_tree(const std::vector<float>& x, int threads) {
  float* d_x = device_copy(x);
  float* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, sizeof(float)));
  racy_tree_kernel<<<1, threads, threads * sizeof(float)>>>(d_x, d_out);
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_out));
}

}  // namespace std_cuda
