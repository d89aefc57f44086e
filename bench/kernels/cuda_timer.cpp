#include "cuda_timer.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <stdexcept>

namespace dsb {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

int attribute(cudaDeviceAttr a, int dev) {
  int v = 0;
  check(cudaDeviceGetAttribute(&v, a, dev), "cudaDeviceGetAttribute");
  return v;
}

// Created on first use and kept for the process: one flush buffer, two events.
struct Timer {
  void* flush = nullptr;
  std::size_t flush_bytes = 0;
  cudaEvent_t start{}, stop{};

  Timer() {
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    // Twice L2, so that no replacement policy can keep a line of the kernel's inputs
    // through the memset.
    flush_bytes = 2 * static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, dev));
    check(cudaMalloc(&flush, flush_bytes), "cudaMalloc (L2 flush buffer)");
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
};

}  // namespace

std::string cuda_device(CudaDevice& out) {
  try {
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    out.name = p.name;
    // CUDA 13 dropped cudaDeviceProp::memoryClockRate; the attribute remains. kHz, and two
    // transfers per clock (DDR / HBM), bus width in bits.
    const double clock_hz = 1e3 * attribute(cudaDevAttrMemoryClockRate, dev);
    const double bus_bytes = attribute(cudaDevAttrGlobalMemoryBusWidth, dev) / 8.0;
    out.peak_gbps = 2.0 * clock_hz * bus_bytes / 1e9;
    out.l2_bytes = p.l2CacheSize;
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

double cuda_time_cold(const std::function<void()>& launch) {
  static Timer t;
  check(cudaMemsetAsync(t.flush, 0, t.flush_bytes, nullptr), "cudaMemsetAsync (L2 flush)");
  check(cudaEventRecord(t.start, nullptr), "cudaEventRecord");
  launch();
  check(cudaEventRecord(t.stop, nullptr), "cudaEventRecord");
  check(cudaEventSynchronize(t.stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime");
  return ms * 1e-3;
}

}  // namespace dsb
