// Host entry points of standard_cuda.cu: kernels written for nvcc as they are found in the wild
// (<<<>>>, extern __shared__, cooperative groups, cache hints, float4/half2, cudaMalloc and
// friends), built unchanged through driftscope_add_simt_kernel()'s CUDA front end. Host vectors
// in and out; device memory is the .cu's own business.
#pragma once

#include <string>
#include <vector>

namespace std_cuda {

struct BlockSums {
  std::vector<float> per_block;  // the sum of each block's slice (tile shfl_down, then cg::reduce)
  float total = 0;               // every block's sum, added with a global atomicAdd
  int blocks_done = 0;           // an int atomicAdd per block
  std::string last_error;        // cudaGetErrorString(cudaGetLastError()) after the launch
};
// x has blocks * threads * 4 floats: each thread loads one float4 (__ldcs).
BlockSums block_sums(const std::vector<float>& x, int blocks, int threads);

// Per thread of one 64-thread block, tiles of `tile` (8, 16 or 32) threads: the tile's minimum
// (cg::less), maximum (cg::greater), the value of the thread `rank ^ 1` (shfl_xor), of rank 0
// (shfl), the ballot of odd values, thread_rank, meta_group_rank and size, 8 floats per thread.
std::vector<float> tile_ops(const std::vector<float>& x, int tile);

// y[i] = x[i] * s through a kernel template whose T the launch deduces (scale<<<...>>>(x, s, n)),
// with __stcs stores.
std::vector<float> scale_deduced(const std::vector<float>& x, float s);

// Per pair (a, b) of x: (a + b) and a * b through __hadd2/__hmul2 on half2, and a + b through
// bfloat16 pairs, 3 floats per pair.
std::vector<float> half_pairs(const std::vector<float>& x);

// A planted off-by-one in the shared-memory tree: `tid <= stride`, a race the hazard checker sees.
void racy_tree(const std::vector<float>& x, int threads);

}  // namespace std_cuda
