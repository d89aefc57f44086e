// Planted misuses; the test finds each call site by its @diag marker.
#include "test_kernels.h"

namespace simt_test {
namespace {

__global__ void divergent_sync_kernel(int* out) {
  if (threadIdx.x < 40) {
    __syncthreads();  // @diag:divergent-a
  } else {
    __syncthreads();  // @diag:divergent-b
  }
  out[threadIdx.x] = 1;
}

__global__ void exited_lane_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 3) return;
  v = __shfl_xor_sync(0xffffffffu, v, 1);  // @diag:exited
  out[threadIdx.x] = v;
}

__global__ void deadlock_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0) {
    __syncthreads();  // @diag:deadlock-bar
  } else {
    v = __shfl_xor_sync(0xffffffffu, v, 1);  // @diag:deadlock-shfl
  }
  out[threadIdx.x] = v;
}

__global__ void strict_exit_kernel(int* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();  // @diag:strict
  out[threadIdx.x] = 1;
}

__global__ void lane_not_in_mask_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  v = __shfl_sync(0x1u, v, 0);  // @diag:not-in-mask
  out[threadIdx.x] = v;
}

__global__ void mismatched_kernel(int* out) {
  unsigned v = threadIdx.x;
  if (threadIdx.x < 16) {
    v = __shfl_xor_sync(0xffffffffu, v, 1);  // @diag:mismatch-a
  } else {
    v = __ballot_sync(0xffffffffu, 1);  // @diag:mismatch-b
  }
  out[threadIdx.x] = static_cast<int>(v);
}

__global__ void source_not_in_mask_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 8) v = __shfl_down_sync(0xffu, v, 4, 16);  // @diag:source-not-in-mask
  out[threadIdx.x] = v;
}

__global__ void trivial_kernel(int* out) { out[threadIdx.x] = 0; }

struct Scratch {
  simt::DeviceBuffer<int> buf{128};
};

}  // namespace

void diag_divergent_sync() {
  Scratch s;
  simt::launch(divergent_sync_kernel, dim3(2), dim3(64), 0, nullptr, s.buf.data());
}
void diag_exited_lane() {
  Scratch s;
  simt::launch(exited_lane_kernel, dim3(1), dim3(32), 0, nullptr, s.buf.data());
}
void diag_deadlock() {
  Scratch s;
  simt::launch(deadlock_kernel, dim3(1), dim3(32), 0, nullptr, s.buf.data());
}
void diag_strict_exit() {
  Scratch s;
  simt::launch(strict_exit_kernel, dim3(3), dim3(32), 0, nullptr, s.buf.data());
}
void diag_lane_not_in_mask() {
  Scratch s;
  simt::launch(lane_not_in_mask_kernel, dim3(1), dim3(32), 0, nullptr, s.buf.data());
}
void diag_mismatched_collective() {
  Scratch s;
  simt::launch(mismatched_kernel, dim3(1), dim3(32), 0, nullptr, s.buf.data());
}
void diag_source_not_in_mask() {
  Scratch s;
  simt::launch(source_not_in_mask_kernel, dim3(1), dim3(32), 0, nullptr, s.buf.data());
}
void diag_bad_launch() {
  Scratch s;
  simt::launch(trivial_kernel, dim3(1), dim3(2048), 0, nullptr, s.buf.data());
}

}  // namespace simt_test
