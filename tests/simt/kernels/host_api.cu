// A kernel file as repositories ship them: the kernels, then the host code around them (a device
// query that picks the launch, events that time it, a stream, a __constant__ table, a benchmark's
// main). driftscope_add_simt_kernel() builds it unchanged for the CPU; nvcc builds it as it is.
#include <cuda_runtime.h>

#undef NDEBUG  // its device asserts stay on in every build type, as the repository wants them
#include <cassert>
#include <cstdio>
#include <iostream>  // a namespace-scope object with a constructor: the checked build must link it

#include "host_api.h"

#define CHECK_CUDA(call)                                                  \
  do {                                                                    \
    cudaError_t err_ = (call);                                            \
    if (err_ != cudaSuccess) throw std::string(cudaGetErrorString(err_)); \
  } while (0)

namespace host_api {

__constant__ float c_table[4];

__global__ void scale_kernel(const float* x, float* y, int n, bool verbose) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = x[i] * c_table[i % 4];
  if (verbose && i == 0) printf("scale_kernel: y[0] = %f\n", y[0]);
}

__global__ void add_one_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

// A square root that asserts its input is not negative, as kernels check their preconditions.
__global__ void sqrt_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  assert(x[i] >= 0.0f);  // @assert:non-negative
  y[i] = sqrtf(x[i]);
}

// An int beside an unsigned, as in `x[min(C - 1, i + u * blockDim.x)]`: CUDA's mixed overloads.
__global__ void clamp_index_kernel(unsigned* out, int last) {
  out[threadIdx.x] = min(last, threadIdx.x * 2u) + max(last - 100, threadIdx.x);
}

std::vector<unsigned> clamp_indices(int threads, int last) {
  unsigned* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, threads * sizeof(unsigned)));
  clamp_index_kernel<<<1, threads>>>(d, last);
  std::vector<unsigned> out(threads);
  CHECK_CUDA(cudaMemcpy(out.data(), d, threads * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d));
  return out;
}

Device query() {
  Device d;
  int device = -1;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.major = prop.major;
  d.minor = prop.minor;
  d.warp_size = prop.warpSize;
  CHECK_CUDA(cudaDeviceGetAttribute(&d.smem_optin_attr, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int ignored = 0;
  d.unknown_attr_error = cudaDeviceGetAttribute(&ignored, cudaDevAttrMaxTexture1DWidth, device);
  (void)cudaGetLastError();
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d.blocks_per_sm_256, scale_kernel, 256, 0));
  cudaFuncAttributes attr;
  CHECK_CUDA(cudaFuncGetAttributes(&attr, scale_kernel));
  d.func_max_threads = attr.maxThreadsPerBlock;
  return d;
}

Scaled scale_by_table(const std::vector<float>& x, const std::vector<float>& table) {
  Scaled out;
  const int n = static_cast<int>(x.size());
  const size_t bytes = x.size() * sizeof(float);
  out.oversized_copy_error = cudaMemcpyToSymbol(c_table, table.data(), 5 * sizeof(float));
  (void)cudaGetLastError();
  CHECK_CUDA(cudaMemcpyToSymbol(c_table, table.data(), 4 * sizeof(float)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, bytes));
  for (int i = 0; i < n; ++i) pinned[i] = x[i];
  float *d_x = nullptr, *d_y = nullptr;
  CHECK_CUDA(cudaMallocAsync(&d_x, bytes, stream));
  CHECK_CUDA(cudaMallocAsync(&d_y, bytes, stream));
  CHECK_CUDA(cudaMemcpyAsync(d_x, pinned, bytes, cudaMemcpyHostToDevice, stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  scale_kernel<<<(n + 127) / 128, 128, 0, stream>>>(d_x, d_y, n, false);
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaEventElapsedTime(&out.elapsed_ms, start, stop));
  out.y.resize(x.size());
  CHECK_CUDA(cudaMemcpyAsync(out.y.data(), d_y, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  out.table.resize(4);
  CHECK_CUDA(cudaMemcpyFromSymbol(out.table.data(), c_table, 4 * sizeof(float)));
  CHECK_CUDA(cudaFreeAsync(d_x, stream));
  CHECK_CUDA(cudaFreeAsync(d_y, stream));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return out;
}

std::vector<float> add_one_launched(const std::vector<float>& x) {
  int n = static_cast<int>(x.size());
  const size_t bytes = x.size() * sizeof(float);
  float *d_x = nullptr, *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_x, bytes));
  CHECK_CUDA(cudaMalloc(&d_y, bytes));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
  void* args[] = {&d_x, &d_y, &n};
  CHECK_CUDA(cudaLaunchKernel(add_one_kernel, dim3((n + 63) / 64), dim3(64), args, 0, nullptr));
  CHECK_CUDA(cudaPeekAtLastError());
  std::vector<float> y(x.size());
  CHECK_CUDA(cudaMemcpy(y.data(), d_y, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  return y;
}

static void add_one_calculate(float* d_y, float* d_x, int n, void* stream) {
  cudaStream_t cuda_stream = reinterpret_cast<cudaStream_t>(stream);
  add_one_kernel<<<(n + 63) / 64, 64, 0, cuda_stream>>>(d_x, d_y, n);
}

std::vector<float> add_one_on_opaque_stream(const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  const size_t bytes = x.size() * sizeof(float);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float *d_x = nullptr, *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_x, bytes));
  CHECK_CUDA(cudaMalloc(&d_y, bytes));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
  add_one_calculate(d_y, d_x, n, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> y(x.size());
  CHECK_CUDA(cudaMemcpy(y.data(), d_y, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return y;
}

std::vector<float> checked_sqrt(const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  float *d_x = nullptr, *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  sqrt_kernel<<<(n + 63) / 64, 64>>>(d_x, d_y, n);
  std::vector<float> y(x.size());
  CHECK_CUDA(cudaMemcpy(y.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  return y;
}

int warps_of(int block_size) {
  assert(block_size % 32 == 0);  // @assert:host-block-size
  return block_size / 32;
}

void allocate_then_reset(int blocks) {
  for (int i = 0; i < blocks; ++i) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 256));
  }
  CHECK_CUDA(cudaDeviceReset());
}

}  // namespace host_api

// The file's own benchmark, as repositories keep one beside their kernels. The CPU build renames
// it (a plugin or test program has its own main).
int main() {
  std::vector<float> x(1 << 16, 1.0f);
  const host_api::Scaled s = host_api::scale_by_table(x, {1, 2, 3, 4});
  std::cout << "scale_by_table: " << s.elapsed_ms << " ms\n";
  CHECK_CUDA(cudaDeviceReset());  // as samples end their main: it must build, though main never runs here
  return 0;
}
