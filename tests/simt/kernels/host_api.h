// Host entry points of host_api.cu: a kernel file as a repository has it, host code included (a
// device query, timing events, streams, stream-ordered and pinned memory, a __constant__ table,
// occupancy, cudaLaunchKernel, device printf and its own main), built unchanged through
// driftscope_add_simt_kernel()'s CUDA front end.
#pragma once

#include <string>
#include <vector>

namespace host_api {

struct Device {
  std::string name;
  int sm_count = 0, major = 0, minor = 0, warp_size = 0;
  int smem_optin_attr = 0;     // cudaDeviceGetAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)
  int unknown_attr_error = 0;  // what cudaDeviceGetAttribute returns for an attribute not simulated
  int blocks_per_sm_256 = 0;   // cudaOccupancyMaxActiveBlocksPerMultiprocessor, 256 threads, no smem
  int func_max_threads = 0;    // cudaFuncGetAttributes(...).maxThreadsPerBlock
};
Device query();

struct Scaled {
  std::vector<float> y;          // y[i] = x[i] * table[i % 4], the table a __constant__ array
  std::vector<float> table;      // read back with cudaMemcpyFromSymbol
  float elapsed_ms = -1;         // between two events around the launch
  int oversized_copy_error = 0;  // cudaMemcpyToSymbol of more bytes than the symbol has
};
// Through a stream: cudaMallocAsync, cudaMemcpyAsync, <<<grid, block, 0, stream>>>, cudaFreeAsync;
// the input staged in pinned memory (cudaMallocHost).
Scaled scale_by_table(const std::vector<float>& x, const std::vector<float>& table);

// y = x + 1 launched with cudaLaunchKernel and an argument array.
std::vector<float> add_one_launched(const std::vector<float>& x);

// y = x + 1 on a stream that an operator library's entry point takes as a void* and casts back
// (reinterpret_cast<cudaStream_t>, a pointer to an incomplete type), as InfiniCore's do.
std::vector<float> add_one_on_opaque_stream(const std::vector<float>& x);

// Per thread t of one block: min(last, 2t) + max(last - 100, t), an int beside an unsigned in each.
std::vector<unsigned> clamp_indices(int threads, int last);

// y = sqrt(x) by a kernel that asserts each x is not negative (a device assert).
std::vector<float> checked_sqrt(const std::vector<float>& x);

// The warps of a block of `block_size` threads, which host code asserts is a whole number.
int warps_of(int block_size);

// Allocates `blocks` device blocks, never freed, then calls cudaDeviceReset.
void allocate_then_reset(int blocks);

}  // namespace host_api
