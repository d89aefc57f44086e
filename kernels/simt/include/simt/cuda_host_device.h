// The rest of the host code a repository's kernel file carries around its kernels, on the SIMT CPU
// runtime: device queries (a simulated GPU's properties), events timed by the CPU clock, streams,
// stream-ordered and pinned allocations, __constant__/__device__ symbols, function attributes,
// occupancy, and cudaLaunchKernel. Part of simt/cuda_host_api.h, redirected by macro as it is.
//
// Everything runs in order on the host thread, as cuda_host_api.h's calls do: a stream is a name
// for "now", an event records the CPU's monotonic clock (cudaEventElapsedTime times the emulation,
// not a GPU), and a launch on a stream has finished when it returns. The simulated device is the
// one DRIFTSCOPE_SIMT_DEVICE names (docs/simt.md, "The host API"): h100 (the default), a100 or
// rtx4090, with that GPU's published SM count, shared memory, register file and compute
// capability, so that code choosing a tile size or a grid from them takes the path it would there.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>
#include <type_traits>
#include <utility>

namespace simt::detail {

// A GPU's properties as its vendor publishes them; what the simulated device reports.
struct SimulatedGpu {
  std::string_view key;  // DRIFTSCOPE_SIMT_DEVICE's value
  const char* name;
  int major, minor;
  int sm_count;
  std::size_t smem_per_block, smem_per_block_optin, smem_per_sm;
  int regs_per_block, regs_per_sm;
  int max_threads_per_sm, max_blocks_per_sm;
  int l2_bytes;
  std::size_t global_bytes;
  int bus_width_bits;
};

inline constexpr SimulatedGpu kSimulatedGpus[] = {
    {"h100", "NVIDIA H100 80GB HBM3 (simulated by the SIMT CPU runtime)", 9, 0, 132, 48u << 10, 227u << 10,
     228u << 10, 65536, 65536, 2048, 32, 50 << 20, std::size_t(80) << 30, 5120},
    {"a100", "NVIDIA A100-SXM4-80GB (simulated by the SIMT CPU runtime)", 8, 0, 108, 48u << 10, 163u << 10,
     164u << 10, 65536, 65536, 2048, 32, 40 << 20, std::size_t(80) << 30, 5120},
    {"rtx4090", "NVIDIA GeForce RTX 4090 (simulated by the SIMT CPU runtime)", 8, 9, 128, 48u << 10,
     99u << 10, 100u << 10, 65536, 65536, 1536, 24, 72 << 20, std::size_t(24) << 30, 384},
};

// The device DRIFTSCOPE_SIMT_DEVICE names, or nullptr (said once on stderr) for a name not in the
// table.
inline const SimulatedGpu* simulated_gpu() {
  static const SimulatedGpu* gpu = []() -> const SimulatedGpu* {
    const char* env = std::getenv("DRIFTSCOPE_SIMT_DEVICE");
    const std::string_view want = env && *env ? env : "h100";
    for (const SimulatedGpu& g : kSimulatedGpus)
      if (g.key == want) return &g;
    std::fprintf(stderr, "simt: DRIFTSCOPE_SIMT_DEVICE=%s is not a simulated device (h100, a100, rtx4090)\n",
                 env);
    return nullptr;
  }();
  return gpu;
}

// Streams and events are objects of these types behind the toolkit's opaque handle types.
struct SimtStream {
  unsigned flags = 0;
};
struct SimtEvent {
  double at_ms = 0;  // CLOCK_MONOTONIC
  bool recorded = false;
};
inline SimtEvent* event_of(cudaEvent_t e) { return reinterpret_cast<SimtEvent*>(e); }

}  // namespace simt::detail

inline cudaError_t simt_cudaGetDevice(int* device) {
  if (device == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

inline cudaError_t simt_cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  const ::simt::detail::SimulatedGpu* g = ::simt::detail::simulated_gpu();
  if (p == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  if (device != 0) return ::simt::detail::cuda_fail(cudaErrorInvalidDevice);
  if (g == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "%s", g->name);
  p->totalGlobalMem = g->global_bytes;
  p->sharedMemPerBlock = g->smem_per_block;
  p->sharedMemPerBlockOptin = g->smem_per_block_optin;
  p->sharedMemPerMultiprocessor = g->smem_per_sm;
  p->regsPerBlock = g->regs_per_block;
  p->regsPerMultiprocessor = g->regs_per_sm;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = g->major;
  p->minor = g->minor;
  p->multiProcessorCount = g->sm_count;
  p->l2CacheSize = g->l2_bytes;
  p->maxThreadsPerMultiProcessor = g->max_threads_per_sm;
  p->maxBlocksPerMultiProcessor = g->max_blocks_per_sm;
  p->memoryBusWidth = g->bus_width_bits;
  p->concurrentKernels = 1;
  p->unifiedAddressing = 1;
  p->cooperativeLaunch = 1;
  p->memoryPoolsSupported = 1;
  return cudaSuccess;
}

// The attributes kernel files ask for; any other is cudaErrorInvalidValue, said on stderr with its
// number (cudaDeviceAttr in the toolkit's driver_types.h).
inline cudaError_t simt_cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  if (value == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  if (const cudaError_t e = simt_cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(p.sharedMemPerBlock); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = int(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrTotalConstantMemory: *value = int(p.totalConstMem); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
    case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; break;
    default:
      std::fprintf(stderr, "simt: cudaDeviceGetAttribute: attribute %d is not simulated\n", int(attr));
      return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

inline cudaError_t simt_cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  const ::simt::detail::SimulatedGpu* g = ::simt::detail::simulated_gpu();
  if (free_bytes == nullptr || total_bytes == nullptr || g == nullptr)
    return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *free_bytes = *total_bytes = g->global_bytes;
  return cudaSuccess;
}

// Streams: work is done when its call returns, so there is never anything to wait for.
inline cudaError_t simt_cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  if (s == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *s = reinterpret_cast<cudaStream_t>(new ::simt::detail::SimtStream{flags});
  return cudaSuccess;
}
inline cudaError_t simt_cudaStreamCreate(cudaStream_t* s) { return simt_cudaStreamCreateWithFlags(s, 0); }
inline cudaError_t simt_cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int) {
  return simt_cudaStreamCreateWithFlags(s, flags);
}
inline cudaError_t simt_cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<::simt::detail::SimtStream*>(s);
  return cudaSuccess;
}
inline cudaError_t simt_cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
inline cudaError_t simt_cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) { return cudaSuccess; }

// Events: the CPU's steady clock when recorded.
inline cudaError_t simt_cudaEventCreate(cudaEvent_t* e, unsigned = 0) {
  if (e == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *e = reinterpret_cast<cudaEvent_t>(new ::simt::detail::SimtEvent{});
  return cudaSuccess;
}
inline cudaError_t simt_cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  return simt_cudaEventCreate(e, flags);
}
inline cudaError_t simt_cudaEventDestroy(cudaEvent_t e) {
  delete ::simt::detail::event_of(e);
  return cudaSuccess;
}
inline cudaError_t simt_cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  if (e == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidResourceHandle);
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  ::simt::detail::event_of(e)->at_ms = double(now.tv_sec) * 1e3 + double(now.tv_nsec) * 1e-6;
  ::simt::detail::event_of(e)->recorded = true;
  return cudaSuccess;
}
inline cudaError_t simt_cudaEventSynchronize(cudaEvent_t e) {
  return e == nullptr ? ::simt::detail::cuda_fail(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
inline cudaError_t simt_cudaEventQuery(cudaEvent_t e) { return simt_cudaEventSynchronize(e); }
inline cudaError_t simt_cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr)
    return ::simt::detail::cuda_fail(cudaErrorInvalidResourceHandle);
  const ::simt::detail::SimtEvent *a = ::simt::detail::event_of(start), *b = ::simt::detail::event_of(end);
  if (!a->recorded || !b->recorded) return ::simt::detail::cuda_fail(cudaErrorInvalidResourceHandle);
  *ms = float(b->at_ms - a->at_ms);
  return cudaSuccess;
}

// Stream-ordered and pinned allocations: device memory as cudaMalloc's, in order.
template <class T>
cudaError_t simt_cudaMallocAsync(T** p, std::size_t bytes, cudaStream_t,
                                 std::source_location where = std::source_location::current()) {
  return simt_cudaMalloc(p, bytes, where);
}
inline cudaError_t simt_cudaFreeAsync(void* p, cudaStream_t,
                                     std::source_location where = std::source_location::current()) {
  return simt_cudaFree(p, where);
}
template <class T>
cudaError_t simt_cudaMallocHost(T** p, std::size_t bytes, unsigned = 0,
                                std::source_location where = std::source_location::current()) {
  return simt_cudaMalloc(p, bytes, where);
}
template <class T>
cudaError_t simt_cudaHostAlloc(T** p, std::size_t bytes, unsigned flags) {
  return simt_cudaMallocHost(p, bytes, flags);
}
inline cudaError_t simt_cudaFreeHost(void* p, std::source_location where = std::source_location::current()) {
  return simt_cudaFree(p, where);
}

// __constant__ and __device__ variables are plain variables of the host build (the toolkit's
// host_defines.h spells the qualifiers as nothing outside nvcc): a symbol copy is a bounded memcpy.
template <class T>
cudaError_t simt_cudaMemcpyToSymbol(const T& symbol, const void* src, std::size_t count,
                                    std::size_t offset = 0, cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset > sizeof(T) || count > sizeof(T) - offset || (count != 0 && src == nullptr))
    return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  std::memcpy(reinterpret_cast<unsigned char*>(const_cast<T*>(&symbol)) + offset, src, count);
  return cudaSuccess;
}
template <class T>
cudaError_t simt_cudaMemcpyFromSymbol(void* dst, const T& symbol, std::size_t count, std::size_t offset = 0,
                                      cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (offset > sizeof(T) || count > sizeof(T) - offset || (count != 0 && dst == nullptr))
    return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  std::memcpy(dst, reinterpret_cast<const unsigned char*>(&symbol) + offset, count);
  return cudaSuccess;
}
template <class T>
cudaError_t simt_cudaMemcpyToSymbolAsync(const T& symbol, const void* src, std::size_t count,
                                         std::size_t offset, cudaMemcpyKind kind, cudaStream_t = nullptr) {
  return simt_cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
template <class T, class U>
cudaError_t simt_cudaGetSymbolAddress(U** address, const T& symbol) {
  if (address == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *address = reinterpret_cast<U*>(const_cast<T*>(&symbol));
  return cudaSuccess;
}

// What the CPU build knows of a kernel: nothing a compiler decided (registers, local memory), so
// the numbers are the simulated device's limits, and static shared memory is reported as 0.
template <class Kernel>
cudaError_t simt_cudaFuncGetAttributes(cudaFuncAttributes* a, Kernel*) {
  cudaDeviceProp p;
  if (a == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  if (const cudaError_t e = simt_cudaGetDeviceProperties(&p, 0); e != cudaSuccess) return e;
  std::memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = p.maxThreadsPerBlock;
  a->numRegs = 32;
  a->maxDynamicSharedSizeBytes = int(p.sharedMemPerBlock);
  a->ptxVersion = a->binaryVersion = p.major * 10 + p.minor;
  return cudaSuccess;
}

// Blocks of `block_size` threads and `dynamic_smem` bytes that fit on one SM of the simulated
// device by its thread, block and shared-memory limits (registers are not known on the CPU).
template <class Kernel>
cudaError_t simt_cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel*, int block_size,
                                                               std::size_t dynamic_smem) {
  cudaDeviceProp p;
  if (blocks == nullptr || block_size <= 0) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  if (const cudaError_t e = simt_cudaGetDeviceProperties(&p, 0); e != cudaSuccess) return e;
  if (block_size > p.maxThreadsPerBlock || dynamic_smem > p.sharedMemPerBlockOptin) {
    *blocks = 0;
    return cudaSuccess;
  }
  int n = p.maxThreadsPerMultiProcessor / block_size;
  if (p.maxBlocksPerMultiProcessor < n) n = p.maxBlocksPerMultiProcessor;
  if (dynamic_smem > 0 && int(p.sharedMemPerMultiprocessor / dynamic_smem) < n)
    n = int(p.sharedMemPerMultiprocessor / dynamic_smem);
  *blocks = n;
  return cudaSuccess;
}

// cudaLaunchKernel(kernel, grid, block, args, smem, stream): `args[i]` points at the i-th argument,
// of the kernel's parameter type, as the runtime API defines it.
template <class... Params>
cudaError_t simt_cudaLaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, void** args,
                                  std::size_t smem = 0, cudaStream_t = nullptr) {
  if (kernel == nullptr || (sizeof...(Params) > 0 && args == nullptr))
    return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ::simt::launch(kernel, grid, block, smem, nullptr, *static_cast<std::decay_t<Params>*>(args[I])...);
  }
  (std::index_sequence_for<Params...>{});
  return cudaSuccess;
}

// The kernel cast to void* loses the type a CPU launch needs: refused at the call's line.
template <class P>
requires std::is_void_v<P> cudaError_t simt_cudaLaunchKernel(P*, dim3, dim3, void**, std::size_t = 0,
                                                             cudaStream_t = nullptr) {
  static_assert(sizeof(P*) == 0,
                "cudaLaunchKernel((void*)kernel, ...): the SIMT CPU runtime launches through the kernel's "
                "type; pass the kernel itself, cudaLaunchKernel(kernel, grid, block, args, smem, stream)");
  return cudaErrorInvalidValue;
}

#define cudaGetDevice simt_cudaGetDevice
#define cudaGetDeviceProperties simt_cudaGetDeviceProperties
#define cudaDeviceGetAttribute simt_cudaDeviceGetAttribute
#define cudaMemGetInfo simt_cudaMemGetInfo
#define cudaStreamCreate simt_cudaStreamCreate
#define cudaStreamCreateWithFlags simt_cudaStreamCreateWithFlags
#define cudaStreamCreateWithPriority simt_cudaStreamCreateWithPriority
#define cudaStreamDestroy simt_cudaStreamDestroy
#define cudaStreamQuery simt_cudaStreamQuery
#define cudaStreamWaitEvent simt_cudaStreamWaitEvent
#define cudaEventCreate simt_cudaEventCreate
#define cudaEventCreateWithFlags simt_cudaEventCreateWithFlags
#define cudaEventDestroy simt_cudaEventDestroy
#define cudaEventRecord simt_cudaEventRecord
#define cudaEventSynchronize simt_cudaEventSynchronize
#define cudaEventQuery simt_cudaEventQuery
#define cudaEventElapsedTime simt_cudaEventElapsedTime
#define cudaMallocAsync simt_cudaMallocAsync
#define cudaFreeAsync simt_cudaFreeAsync
#define cudaMallocHost simt_cudaMallocHost
#define cudaHostAlloc simt_cudaHostAlloc
#define cudaFreeHost simt_cudaFreeHost
#define cudaMemcpyToSymbol simt_cudaMemcpyToSymbol
#define cudaMemcpyFromSymbol simt_cudaMemcpyFromSymbol
#define cudaMemcpyToSymbolAsync simt_cudaMemcpyToSymbolAsync
#define cudaGetSymbolAddress simt_cudaGetSymbolAddress
#define cudaFuncGetAttributes simt_cudaFuncGetAttributes
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor simt_cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaLaunchKernel simt_cudaLaunchKernel
