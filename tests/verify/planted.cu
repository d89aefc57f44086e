// RMSNorm kernels for verify's planted table (tests/verify/CMakeLists.txt): one correct, and one
// per bug or cheat the public kernel benchmarks were passed by. Written as plain CUDA; on the CPU
// through the SIMT runtime (driftscope_add_simt_kernel). Every kernel: one block per row.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "planted.h"

namespace {

constexpr int kThreads = 64;

#define PLANTED_CHECK(call)                                                                                \
  do {                                                                                                     \
    const cudaError_t err = (call);                                                                        \
    if (err != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err)); \
  } while (0)

// The sum of squares of row `row` into `*out`, by a tree over `n_slots` dynamic shared slots; the
// block writes the first blockDim.x of them (so n_slots > blockDim.x reads slots nobody wrote).
__device__ float row_sumsq(const float* x, int cols, int n_slots) {
  extern __shared__ float partial[];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += xr[c] * xr[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = n_slots / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int cols, float eps, int n_slots) {
  const float ss = row_sumsq(x, cols, n_slots);
  const float inv = rsqrtf(ss / cols + eps);
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[at + c] = x[at + c] * inv * w[c];
}

// The same through a global buffer of per-row sums: `rows_written` rows get theirs.
__global__ void sumsq_kernel(const float* x, float* sums, int cols, int rows_written) {
  const float ss = row_sumsq(x, cols, blockDim.x);
  if (threadIdx.x == 0 && static_cast<int>(blockIdx.x) < rows_written) sums[blockIdx.x] = ss;
}

__global__ void scale_kernel(const float* x, const float* sums, const float* w, float* y, int cols,
                             float eps) {
  const float inv = rsqrtf(sums[blockIdx.x] / cols + eps);  // @stale-read: planted-stale-global's last row
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[at + c] = x[at + c] * inv * w[c];
}

// Split-K: blockIdx.y takes half the row; both halves meet in sums[row] with a plain += (no
// atomicAdd): a lost update wherever the two blocks run at once.
__global__ void split_sumsq_kernel(const float* x, float* sums, int cols) {
  __shared__ float partial[kThreads];
  const int half = (cols + 1) / 2;
  const int c0 = blockIdx.y * half, c1 = min(cols, c0 + half);
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = c0 + threadIdx.x; c < c1; c += blockDim.x) acc += xr[c] * xr[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] += partial[0];
}

// A static __shared__ tree without a barrier between its levels: a thread reads a slot another
// thread of the block is still to add into.
__global__ void static_race_kernel(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float partial[kThreads];
  __shared__ float inv;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += xr[c] * xr[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2)
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
  if (threadIdx.x == 0) inv = rsqrtf(partial[0] / cols + eps);
  __syncthreads();
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[at + c] = x[at + c] * inv * w[c];
}

// The tree of row_sumsq in a static __shared__ array, over twice the slots the block wrote.
__global__ void static_uninit_kernel(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float partial[2 * kThreads];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += xr[c] * xr[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / cols + eps);
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[at + c] = x[at + c] * inv * w[c];
}

// Four strided partial sums per thread, one per slice of blockDim.x columns; a slice past the
// row's end is never written (no `else part[j] = 0`), so its partial is whatever the local held.
__global__ void uninit_local_kernel(const float* x, const float* w, float* y, int cols, float eps) {
  __shared__ float partial[kThreads];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float part[4];  // @uninit-local
  for (int j = 0; j < 4; ++j) {
    const int c = static_cast<int>(threadIdx.x) + j * static_cast<int>(blockDim.x);
    if (c < cols) part[j] = xr[c] * xr[c];
  }
  partial[threadIdx.x] = part[0] + part[1] + part[2] + part[3];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / cols + eps);
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[at + c] = x[at + c] * inv * w[c];
}

// Declared f32, computed in f16: every input, product and output rounded to half.
__global__ void half_kernel(const float* x, const float* w, float* y, int cols, float eps) {
  const float ss = row_sumsq(x, cols, blockDim.x);
  const __half inv = __float2half(rsqrtf(ss / cols + eps));
  const size_t at = static_cast<size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[at + c] = __half2float(__hmul(__hmul(__float2half(x[at + c]), inv), __float2half(w[c])));
}

struct DeviceRows {
  float* x = nullptr;
  float* w = nullptr;
  float* y = nullptr;
  DeviceRows(const float* hx, const float* hw, int rows, int cols) {
    const size_t n = static_cast<size_t>(rows) * cols;
    PLANTED_CHECK(cudaMalloc(&x, n * sizeof(float)));
    PLANTED_CHECK(cudaMalloc(&w, static_cast<size_t>(cols) * sizeof(float)));
    PLANTED_CHECK(cudaMalloc(&y, n * sizeof(float)));
    PLANTED_CHECK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    PLANTED_CHECK(cudaMemcpy(w, hw, static_cast<size_t>(cols) * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceRows() {
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
  }
  DeviceRows(const DeviceRows&) = delete;
  DeviceRows& operator=(const DeviceRows&) = delete;
};

}  // namespace

PlantedScratch::PlantedScratch(int max_rows) {
  PLANTED_CHECK(cudaMalloc(&sums, static_cast<size_t>(max_rows) * sizeof(float)));
}
PlantedScratch::~PlantedScratch() { cudaFree(sums); }

void planted_rmsnorm(PlantedKernel k, float* out, const float* x, const float* w, int rows, int cols,
                     float eps, PlantedScratch& scratch) {
  DeviceRows d(x, w, rows, cols);
  const size_t smem = kThreads * sizeof(float);
  switch (k) {
    case PlantedKernel::correct:
      rmsnorm_kernel<<<rows, kThreads, smem>>>(d.x, d.w, d.y, cols, eps, kThreads);
      break;
    case PlantedKernel::uninit_shared:
      // The tree runs over twice the slots the block wrote.
      rmsnorm_kernel<<<rows, kThreads, 2 * smem>>>(d.x, d.w, d.y, cols, eps, 2 * kThreads);
      break;
    case PlantedKernel::stale_global:
      // The last row's sum is never written: it is whatever an earlier call left (or never wrote).
      sumsq_kernel<<<rows, kThreads, smem>>>(d.x, scratch.sums, cols, rows - 1);
      scale_kernel<<<rows, kThreads>>>(d.x, scratch.sums, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::lost_update:
      PLANTED_CHECK(cudaMemset(scratch.sums, 0, static_cast<size_t>(rows) * sizeof(float)));
      split_sumsq_kernel<<<dim3(rows, 2), kThreads>>>(d.x, scratch.sums, cols);
      scale_kernel<<<rows, kThreads>>>(d.x, scratch.sums, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::split_past_2048:
      // Correct up to 2048 columns; past them (a real model's width, which no tiny preset has) the
      // row is split across two blocks that meet in sums[row] with the lost update above.
      if (cols <= 2048) {
        rmsnorm_kernel<<<rows, kThreads, smem>>>(d.x, d.w, d.y, cols, eps, kThreads);
        break;
      }
      PLANTED_CHECK(cudaMemset(scratch.sums, 0, static_cast<size_t>(rows) * sizeof(float)));
      split_sumsq_kernel<<<dim3(rows, 2), kThreads>>>(d.x, scratch.sums, cols);
      scale_kernel<<<rows, kThreads>>>(d.x, scratch.sums, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::static_shared_race:
      static_race_kernel<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::uninit_static_shared:
      static_uninit_kernel<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::uninit_local:
      uninit_local_kernel<<<rows, kThreads>>>(d.x, d.w, d.y, cols, eps);
      break;
    case PlantedKernel::half_compute: half_kernel<<<rows, kThreads, smem>>>(d.x, d.w, d.y, cols, eps); break;
  }
  PLANTED_CHECK(cudaGetLastError());
  PLANTED_CHECK(
      cudaMemcpy(out, d.y, static_cast<size_t>(rows) * cols * sizeof(float), cudaMemcpyDeviceToHost));
}
