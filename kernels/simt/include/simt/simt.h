// The only header a kernel includes. Under nvcc it is plain CUDA; under a host
// compiler it pulls in the fiber-based CPU runtime (simt_cpu.h).
#pragma once

#include "simt/simt_common.h"

#include <utility>
#include <vector>

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#define SIMT_BACKEND_CUDA 1
#define SIMT_BACKEND_NAMESPACE_BEGIN inline namespace cuda_backend {
#define SIMT_BACKEND_NAMESPACE_END }

// One shared symbol name for every kernel: per-kernel names with different
// element types would clash in nvcc's single extern __shared__ array.
#define SIMT_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char simt_dynamic_smem_[]; \
  T* const name = reinterpret_cast<T*>(simt_dynamic_smem_)

// Everything nvcc compiles here lives in an inline namespace: a binary that links both builds of a
// kernel library (the simt and cuda candidates) must never have the linker merge the CPU runtime's
// simt::malloc with this one, which an unoptimised build leaves as an out-of-line weak symbol.
namespace simt {
inline namespace cuda_backend {

using stream_t = cudaStream_t;

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw KernelError(std::string(what) + ": " + cudaGetErrorString(e));
}

template <class... KArgs, class... Args>
void launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t dyn_smem_bytes, stream_t stream,
            Args&&... args) {
  kernel<<<grid, block, dyn_smem_bytes, stream>>>(std::forward<Args>(args)...);
  check_cuda(cudaGetLastError(), "simt::launch");
}

inline void* malloc(std::size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}
inline void free(void* p) { cudaFree(p); }
inline void memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
  const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                              : cudaMemcpyDeviceToDevice;
  check_cuda(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy");
}
inline void synchronize() { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

// Empty when kernels can run here; otherwise why not.
inline std::string device_error() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device: cudaGetDeviceCount returned 0 devices";
  return {};
}

// The GPU has no schedule knobs; keeping the calls lets tests compile on both sides.
inline Config& config_storage() {
  static Config c;
  return c;
}
inline void set_config(const Config& c) { config_storage() = c; }
inline Config config() { return config_storage(); }

}  // namespace cuda_backend
}  // namespace simt

#else

#define SIMT_BACKEND_CPU 1
#define SIMT_BACKEND_NAMESPACE_BEGIN
#define SIMT_BACKEND_NAMESPACE_END
#include "simt/simt_cpu.h"

namespace simt {
// The CPU backend always runs.
inline std::string device_error() { return {}; }
}  // namespace simt

#endif

namespace simt {
SIMT_BACKEND_NAMESPACE_BEGIN

// Scoped override of the CPU schedule; restores the previous config on exit.
class ScopedConfig {
 public:
  explicit ScopedConfig(const Config& c) : saved_(config()) { set_config(c); }
  ~ScopedConfig() { set_config(saved_); }
  ScopedConfig(const ScopedConfig&) = delete;
  ScopedConfig& operator=(const ScopedConfig&) = delete;

 private:
  Config saved_;
};

// Owning device allocation of n elements; host memory on the CPU backend, where
// it is filled with 0xFF so reads of never-written device memory give NaN.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n), p_(static_cast<T*>(simt::malloc(n * sizeof(T)))) {}
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      n_ = std::exchange(o.n_, 0);
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }

  void upload(const T* src, std::size_t n) { simt::memcpy(p_, src, n * sizeof(T), CopyKind::host_to_device); }
  void upload(const std::vector<T>& v) { upload(v.data(), v.size() < n_ ? v.size() : n_); }
  void download(T* dst, std::size_t n) const {
    simt::memcpy(dst, p_, n * sizeof(T), CopyKind::device_to_host);
  }
  std::vector<T> to_host() const {
    std::vector<T> v(n_);
    download(v.data(), n_);
    return v;
  }

 private:
  void reset() {
    if (p_ != nullptr) simt::free(p_);
    p_ = nullptr;
    n_ = 0;
  }
  std::size_t n_ = 0;
  T* p_ = nullptr;
};

SIMT_BACKEND_NAMESPACE_END
}  // namespace simt
