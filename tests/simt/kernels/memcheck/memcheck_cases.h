// Host entry points of the memcheck test kernels (one .cu per case, written for nvcc as kernels
// are found in the wild: cudaMalloc, <<<>>>, cudaFree). Each runs its kernel once on device memory
// of its own and returns what the kernel wrote back (empty where the case writes nothing back).
#pragma once

#include <vector>

namespace memcheck_cases {

// A flat grid of 256 threads writing y[idx] with no `idx < n` guard, at a one-token step of 64
// outputs; `guarded`: with the guard.
std::vector<float> grid_guard(bool guarded);
// out[i] = in[i - 4] for 64 threads over a 64-float input: thread 0..3 read before its start.
std::vector<float> read_before_start();
// A hostile kernel writing y[-16].
std::vector<float> write_before_start();
// `threads` threads fill a static `__shared__ float tile[32]`, one element each (64: past its end).
std::vector<float> static_shared_past_size(int threads);
// 64 threads fill a static `__shared__ float tile[64]` and read it back as float4s (aligned).
std::vector<float> static_shared_as_float4();
// 64 threads stage into `extern __shared__ float s[]` launched with room for 32.
std::vector<float> dynamic_shared_past_size();
// Each of 16 threads loads a float4 from x + 4 * t + `offset` floats (x: 72 floats): offset 1 is
// misaligned on a GPU and gives the right sums on the CPU; offset 0 is aligned.
std::vector<float> float4_load(int offset);
// The kernel writes a buffer the host freed before the launch.
std::vector<float> use_after_free();
// The same after cudaDeviceReset, which freed every block.
std::vector<float> use_after_device_reset();
// cudaFree twice on one block.
void double_free();
// cudaFree of a pointer into the middle of a block (never handed out by cudaMalloc).
void free_of_never_allocated();
// The kernel stores through a null pointer argument.
void null_store();
// The kernel writes 4 GiB past its output.
void wild_store();
// How a 64-float buffer is written before a kernel reads all of it: not at all, by each way a host
// program writes device memory, or by a kernel that fills only its first half.
enum class UnwrittenWay { nothing, memset, memcpy, kernel, half_by_kernel, host_loop };
std::vector<float> unwritten_read(UnwrittenWay way);
// 32 threads read a buffer nothing wrote, then threads 16..31 fail a device assert.
void unwritten_read_then_assert();

}  // namespace memcheck_cases
