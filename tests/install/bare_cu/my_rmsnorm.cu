// RMSNorm, f32, as a code generator writes a kernel: one .cu for nvcc, no Driftscope header, no
// build files. tests/install/bare_cu_e2e.py hands it to `driftscope verify --candidate` with
// rmsnorm.yaml, and plants bugs in copies of it.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t err = (call);                                                                        \
    if (err != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err)); \
  } while (0)

constexpr int kThreads = 128;  // a power of two: the tree halves it

// One block per row: each thread sums the squares of a strided slice, the block adds the partial
// sums as a tree in dynamic shared memory, then every thread scales its slice.
__global__ void rms_norm_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              int cols, float eps) {
  extern __shared__ float partial[];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += xr[c] * xr[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv_rms = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] * inv_rms * w[c];
}

void my_rmsnorm_forward(float* out, const float* x, const float* w, int rows, int cols, float eps) {
  const size_t act = static_cast<size_t>(rows) * cols * sizeof(float), vec = cols * sizeof(float);
  float *d_x = nullptr, *d_w = nullptr, *d_y = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, act));
  CUDA_CHECK(cudaMalloc(&d_w, vec));
  CUDA_CHECK(cudaMalloc(&d_y, act));
  CUDA_CHECK(cudaMemcpy(d_x, x, act, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_w, w, vec, cudaMemcpyHostToDevice));
  // Room for twice the tree, as a kernel tuned for larger blocks asks: the test's planted bug reads
  // the half nothing writes.
  rms_norm_rows<<<rows, kThreads, 2 * kThreads * sizeof(float)>>>(d_x, d_w, d_y, cols, eps);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(out, d_y, act, cudaMemcpyDeviceToHost));
  for (float* p : {d_x, d_w, d_y}) CUDA_CHECK(cudaFree(p));
}
