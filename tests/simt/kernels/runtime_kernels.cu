#include "test_kernels.h"

namespace simt_test {
namespace {

__global__ void collective_kernel(int op, unsigned mask, int b, int width, const unsigned* vals,
                                  const int* preds, unsigned* out) {
  const unsigned lane = threadIdx.x;
  if (((mask >> lane) & 1u) == 0) return;
  const unsigned v = vals[lane];
  unsigned r = 0;
  switch (static_cast<CollOp>(op)) {
    case CollOp::shfl_idx: r = __shfl_sync(mask, v, b, width); break;
    case CollOp::shfl_up: r = __shfl_up_sync(mask, v, static_cast<unsigned>(b), width); break;
    case CollOp::shfl_down: r = __shfl_down_sync(mask, v, static_cast<unsigned>(b), width); break;
    case CollOp::shfl_xor: r = __shfl_xor_sync(mask, v, b, width); break;
    case CollOp::ballot: r = __ballot_sync(mask, preds[lane]); break;
    case CollOp::any: r = static_cast<unsigned>(__any_sync(mask, preds[lane])); break;
    case CollOp::all: r = static_cast<unsigned>(__all_sync(mask, preds[lane])); break;
  }
  out[lane] = r;
}

struct Quad {
  unsigned w[4];
};

__global__ void shuffle_types_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x;
  const char c = static_cast<char>('A' + lane);
  const double d = 1.0 + lane * 0.25;
  Quad q{{lane, lane * 2u, lane * 3u, lane * 4u}};
  const char rc = __shfl_xor_sync(0xffffffffu, c, 5);
  const double rd = __shfl_down_sync(0xffffffffu, d, 3, 8);
#if defined(SIMT_BACKEND_CPU)
  // CUDA's own overloads stop at 8-byte scalars; the CPU backend takes any
  // trivially copyable type up to 16 bytes in one exchange.
  const Quad rq = __shfl_sync(0xffffffffu, q, 31 - static_cast<int>(lane));
#else
  Quad rq;
  for (int i = 0; i < 4; ++i) rq.w[i] = __shfl_sync(0xffffffffu, q.w[i], 31 - static_cast<int>(lane));
#endif
  unsigned long long bits;
  memcpy(&bits, &rd, sizeof bits);
  out[lane * 4 + 0] = static_cast<unsigned>(rc);
  out[lane * 4 + 1] = static_cast<unsigned>(bits);
  out[lane * 4 + 2] = static_cast<unsigned>(bits >> 32);
  out[lane * 4 + 3] = rq.w[0] + rq.w[1] + rq.w[2] + rq.w[3];
}

__global__ void indices_kernel(unsigned* out) {
  const unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
  out[bx * nthreads + tx] = (threadIdx.x << 0) | (threadIdx.y << 4) | (threadIdx.z << 8) |
                            (blockIdx.x << 12) | (blockIdx.y << 16) | (blockIdx.z << 20);
}

__global__ void atomics_kernel(int* icount, float* fsum, unsigned* umax, unsigned* umin) {
  const unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(icount, 1);
  atomicAdd(fsum, 0.5f);
  atomicMax(umax, id);
  atomicMin(umin, id);
  unsigned expected = 0;
  // CAS loop that must not lose updates across host threads.
  while (true) {
    const unsigned seen = atomicCAS(umax + 1, expected, expected + 1);
    if (seen == expected) break;
    expected = seen;
  }
  atomicExch(reinterpret_cast<int*>(icount + 1), 7);
}

__global__ void smem_poison_kernel(unsigned* out) {
  SIMT_DYNAMIC_SHARED(unsigned, s);
  const unsigned t = threadIdx.x;
  if (t % 2 == 1) s[t] = t + blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[t];
}

__global__ void static_shared_kernel(int* out) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicAdd(&total, static_cast<int>(threadIdx.x + blockIdx.x));
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

__global__ void mixed_fast_path_kernel(int* out) {
  __shared__ int buf[64];
  const int t = static_cast<int>(threadIdx.x);
  int v = t + static_cast<int>(blockIdx.x);
  if (blockIdx.x % 2 == 1) {
    buf[t] = v;
    __syncthreads();
    v = buf[63 - t];
    __syncthreads();
  }
  const int lane = t % 32;
  if (lane != 0) v += __shfl_down_sync(0xfffffffeu, v, 1);  // lane 0 met no collective
  out[blockIdx.x * 64 + t] = v;
}

}  // namespace

void collective(CollOp op, unsigned mask, int b, int width, const unsigned* vals, const int* preds,
                unsigned* out) {
  simt::launch(collective_kernel, dim3(1), dim3(32), 0, nullptr, static_cast<int>(op), mask, b, width, vals,
               preds, out);
}

void shuffle_types(unsigned* out) { simt::launch(shuffle_types_kernel, dim3(1), dim3(32), 0, nullptr, out); }

void indices_3d(unsigned* out, dim3 grid, dim3 block) {
  simt::launch(indices_kernel, grid, block, 0, nullptr, out);
}

void atomics(int* icount, float* fsum, unsigned* umax, unsigned* umin, int blocks) {
  simt::launch(atomics_kernel, dim3(blocks), dim3(128), 0, nullptr, icount, fsum, umax, umin);
}

void smem_poison(unsigned* out, int blocks, int threads) {
  simt::launch(smem_poison_kernel, dim3(blocks), dim3(threads), threads * sizeof(unsigned), nullptr, out);
}

void static_shared_sum(int* out, int blocks) {
  simt::launch(static_shared_kernel, dim3(blocks), dim3(96), 0, nullptr, out);
}

void mixed_fast_path(int* out, int blocks) {
  simt::launch(mixed_fast_path_kernel, dim3(blocks), dim3(64), 0, nullptr, out);
}

}  // namespace simt_test
