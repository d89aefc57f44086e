// LayerNorm, f32, written for nvcc as kernel authors write it, with no Driftscope header:
//   y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w + b.
// tests/install/standard_cuda_e2e.py builds this file unmodified against an installed SDK
// (driftscope_add_simt_kernel: the CPU through the SIMT runtime's CUDA front end, and nvcc when
// present) and plants an off-by-one in it.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cg = cooperative_groups;

constexpr int kThreads = 128;  // four warps
constexpr int kSplits = 2;     // blocks per row; their partial sums meet through atomicAdd

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t err = (call);                                                                        \
    if (err != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err)); \
  } while (0)

// sums[row] += this block's share of the row's first moment (row_sums == nullptr: sum of x) or
// second central moment (sum of (x - mean)^2, the mean from row_sums).
__global__ void row_moment_kernel(const float* __restrict__ x, const float* __restrict__ row_sums,
                                  float* sums, int cols) {
  extern __shared__ float warp_sums[];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int row = blockIdx.x;
  const float* xr = x + static_cast<size_t>(row) * cols;
  const bool central = row_sums != nullptr;
  const float mean = central ? row_sums[row] / cols : 0.0f;
  // float4 loads need 16-byte rows; other widths take the scalar loop only.
  const int vecs = cols % 4 == 0 ? cols / 4 : 0;
  const int per_split = (vecs + gridDim.y - 1) / gridDim.y;
  const int v_end = min(vecs, static_cast<int>(blockIdx.y + 1) * per_split);
  float acc = 0.0f;
  for (int v = blockIdx.y * per_split + block.thread_rank(); v < v_end; v += block.size()) {
    const float4 q = __ldcs(reinterpret_cast<const float4*>(xr) + v);
    const float a = q.x - mean, b = q.y - mean, c = q.z - mean, d = q.w - mean;
    acc += central ? (a * a + b * b) + (c * c + d * d) : (a + b) + (c + d);
  }
  if (blockIdx.y == gridDim.y - 1) {
    for (int c = vecs * 4 + block.thread_rank(); c < cols; c += block.size()) {
      const float a = xr[c] - mean;
      acc += central ? a * a : a;
    }
  }
  // Within a warp: the first moment by shuffles down to lane 0, the second by cg::reduce.
  if (central) {
    acc = cg::reduce(warp, acc, cg::plus<float>());
  } else {
    for (int offset = warp.size() / 2; offset > 0; offset /= 2) acc += warp.shfl_down(acc, offset);
  }
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = acc;
  block.sync();
  // Across the warps: a tree in shared memory.
  const int n_warps = (block.size() + 31) / 32;
  const int tid = block.thread_rank();
  for (int stride = n_warps / 2; stride > 0; stride /= 2) {
    if (tid < stride && tid + stride < n_warps) warp_sums[tid] += warp_sums[tid + stride];
    block.sync();
  }
  if (tid == 0) atomicAdd(sums + row, warp_sums[0]);
}

__global__ void normalize_kernel(const float* __restrict__ x, const float* sums, const float* sq_sums,
                                 const float* __restrict__ w, const float* __restrict__ b, float* y, int cols,
                                 float eps) {
  const int row = blockIdx.x;
  const float mean = sums[row] / cols;
  const float rstd = rsqrtf(sq_sums[row] / cols + eps);
  const float* xr = x + static_cast<size_t>(row) * cols;
  float* yr = y + static_cast<size_t>(row) * cols;
  const int vecs = cols % 4 == 0 ? cols / 4 : 0;
  for (int v = threadIdx.x; v < vecs; v += blockDim.x) {
    const float4 q = __ldcs(reinterpret_cast<const float4*>(xr) + v);
    const float4 wv = __ldg(reinterpret_cast<const float4*>(w) + v);
    const float4 bv = __ldg(reinterpret_cast<const float4*>(b) + v);
    const float4 o = make_float4((q.x - mean) * rstd * wv.x + bv.x, (q.y - mean) * rstd * wv.y + bv.y,
                                 (q.z - mean) * rstd * wv.z + bv.z, (q.w - mean) * rstd * wv.w + bv.w);
    __stcs(reinterpret_cast<float4*>(yr) + v, o);
  }
  for (int c = vecs * 4 + threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
}

// Host entry point: host pointers in and out.
void layernorm_forward(float* out, const float* x, const float* w, const float* b, int rows, int cols,
                       float eps) {
  const size_t act = static_cast<size_t>(rows) * cols * sizeof(float), vec = cols * sizeof(float),
               per_row = rows * sizeof(float);
  float *d_x, *d_w, *d_b, *d_y, *d_sums, *d_sq;
  CUDA_CHECK(cudaMalloc(&d_x, act));
  CUDA_CHECK(cudaMalloc(&d_w, vec));
  CUDA_CHECK(cudaMalloc(&d_b, vec));
  CUDA_CHECK(cudaMalloc(&d_y, act));
  CUDA_CHECK(cudaMalloc(&d_sums, per_row));
  CUDA_CHECK(cudaMalloc(&d_sq, per_row));
  CUDA_CHECK(cudaMemcpy(d_x, x, act, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_w, w, vec, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_b, b, vec, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_sums, 0, per_row));
  CUDA_CHECK(cudaMemset(d_sq, 0, per_row));
  const size_t smem = (kThreads / 32) * sizeof(float);
  CUDA_CHECK(cudaFuncSetAttribute(row_moment_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));
  row_moment_kernel<<<dim3(rows, kSplits), kThreads, smem>>>(d_x, nullptr, d_sums, cols);
  row_moment_kernel<<<dim3(rows, kSplits), kThreads, smem>>>(d_x, d_sums, d_sq, cols);
  normalize_kernel<<<rows, kThreads>>>(d_x, d_sums, d_sq, d_w, d_b, d_y, cols, eps);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(out, d_y, act, cudaMemcpyDeviceToHost));
  for (float* p : {d_x, d_w, d_b, d_y, d_sums, d_sq}) CUDA_CHECK(cudaFree(p));
}

// Empty when this build can run here; otherwise why not (the nvcc build without a GPU).
std::string layernorm_unavailable() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(err);
  return n == 0 ? "no CUDA device" : "";
}
