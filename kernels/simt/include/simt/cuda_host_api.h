// The CUDA runtime API calls a .cu's host code makes, on the SIMT CPU runtime: device memory is
// host memory (simt::malloc: filled with 0xFF, tracked for the race rerun), copies are memcpy,
// launches and copies are synchronous. Part of simt/simt_cuda.h.
//
// The toolkit's cuda_runtime_api.h is already included (vector_functions.h includes it) and declares
// these names as the real libcudart's C functions, so each call is redirected by a macro to a C++
// function of the same shape (simt_cudaMalloc, ...): a plugin never defines or calls a libcudart
// symbol, and one process can hold both the CPU and the GPU build of a kernel.
#pragma once

#include <cuda_runtime.h>  // the real header first: included again by the .cu, it is then a no-op

#include <cstring>
#include <new>
#include <source_location>

#include "simt/simt.h"

namespace simt::detail {
inline cudaError_t& cuda_last_error() {
  static thread_local cudaError_t e = cudaSuccess;
  return e;
}
inline cudaError_t cuda_fail(cudaError_t e) {
  cuda_last_error() = e;
  return e;
}
}  // namespace simt::detail

// `where`: the caller's line (cudaMalloc is a macro for this), which a leak report names.
inline cudaError_t simt_cudaMalloc(void** p, std::size_t bytes,
                                   std::source_location where = std::source_location::current()) {
  if (p == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  try {
    *p = ::simt::malloc(bytes, where);
  } catch (const std::bad_alloc&) {
    *p = nullptr;
    return ::simt::detail::cuda_fail(cudaErrorMemoryAllocation);
  }
  return cudaSuccess;
}
template <class T>
cudaError_t simt_cudaMalloc(T** p, std::size_t bytes,
                            std::source_location where = std::source_location::current()) {
  void* v = nullptr;
  const cudaError_t e = simt_cudaMalloc(&v, bytes, where);
  *p = static_cast<T*>(v);
  return e;
}
inline cudaError_t simt_cudaFree(void* p, std::source_location where = std::source_location::current()) {
  ::simt::free(p, where);
  return cudaSuccess;
}
inline cudaError_t simt_cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes != 0 && (dst == nullptr || src == nullptr))
    return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  ::simt::memcpy(dst, src, bytes, ::simt::CopyKind::device_to_device);
  return cudaSuccess;
}
template <class Stream = cudaStream_t>
cudaError_t simt_cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                 Stream = nullptr) {
  return simt_cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t simt_cudaMemset(void* p, int value, std::size_t bytes) {
  if (bytes != 0 && p == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  ::simt::memset(p, value, bytes);
  return cudaSuccess;
}
template <class Stream = cudaStream_t>
cudaError_t simt_cudaMemsetAsync(void* p, int value, std::size_t bytes, Stream = nullptr) {
  return simt_cudaMemset(p, value, bytes);
}
// Returns the last error of this thread's calls and clears it, like cudaGetLastError.
inline cudaError_t simt_cudaGetLastError() {
  const cudaError_t e = ::simt::detail::cuda_last_error();
  ::simt::detail::cuda_last_error() = cudaSuccess;
  return e;
}
inline cudaError_t simt_cudaPeekAtLastError() { return ::simt::detail::cuda_last_error(); }
inline cudaError_t simt_cudaDeviceSynchronize() { return cudaSuccess; }
// Every device block freed, as the GPU's reset drops every allocation of the process (usually the
// last line of a file's main; a step that calls it and then uses its blocks reads freed memory).
inline cudaError_t simt_cudaDeviceReset() {
  ::simt::device_reset();
  ::simt::detail::cuda_last_error() = cudaSuccess;
  return cudaSuccess;
}
// One device: the CPU the runtime runs on.
inline cudaError_t simt_cudaGetDeviceCount(int* n) {
  if (n == nullptr) return ::simt::detail::cuda_fail(cudaErrorInvalidValue);
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t simt_cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : ::simt::detail::cuda_fail(cudaErrorInvalidDevice);
}
template <class Stream>
cudaError_t simt_cudaStreamSynchronize(Stream) {
  return cudaSuccess;
}
// Accepted and ignored: the CPU has no shared-memory carve-out or occupancy to set.
template <class Kernel>
cudaError_t simt_cudaFuncSetAttribute(Kernel*, cudaFuncAttribute, int) {
  return cudaSuccess;
}
inline const char* simt_cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "unknown error (SIMT CPU runtime)";
  }
}
inline const char* simt_cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    default: return "cudaErrorUnknown";
  }
}

#define cudaMalloc simt_cudaMalloc
#define cudaFree simt_cudaFree
#define cudaMemcpy simt_cudaMemcpy
#define cudaMemcpyAsync simt_cudaMemcpyAsync
#define cudaMemset simt_cudaMemset
#define cudaMemsetAsync simt_cudaMemsetAsync
#define cudaGetLastError simt_cudaGetLastError
#define cudaPeekAtLastError simt_cudaPeekAtLastError
#define cudaDeviceSynchronize simt_cudaDeviceSynchronize
#define cudaDeviceReset simt_cudaDeviceReset
#define cudaGetDeviceCount simt_cudaGetDeviceCount
#define cudaSetDevice simt_cudaSetDevice
#define cudaStreamSynchronize simt_cudaStreamSynchronize
#define cudaFuncSetAttribute simt_cudaFuncSetAttribute
#define cudaGetErrorString simt_cudaGetErrorString
#define cudaGetErrorName simt_cudaGetErrorName

#include "simt/cuda_host_device.h"  // device queries, events, streams, symbols, occupancy
