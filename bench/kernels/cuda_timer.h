// GPU timing for bench/kernels, kept out of bench_kernels.cpp so that file never includes a
// CUDA header and builds the same with or without the toolkit. Compiled only when the
// ds_kernels_cuda target exists (DS_BENCH_CUDA).
#pragma once

#include <functional>
#include <string>

namespace dsb {

struct CudaDevice {
  std::string name;
  double peak_gbps = 0;  // from the memory clock and bus width
  long l2_bytes = 0;
};

// The current device, or an error naming what failed.
std::string cuda_device(CudaDevice& out);

// Seconds one call of `launch` takes on the GPU, between two events on the default stream
// (where every table launch goes), after a write larger than L2 has evicted its inputs.
// Throws std::runtime_error on a CUDA error.
double cuda_time_cold(const std::function<void()>& launch);

}  // namespace dsb
