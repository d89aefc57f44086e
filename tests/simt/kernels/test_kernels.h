// Host-side launchers for the SIMT test kernels. The same .cu files compile
// with nvcc (compile-only in CI) and with the host compiler through SIMT.
#pragma once

#include "simt/simt.h"

namespace simt_test {

constexpr int kGemvWarpsPerBlock = 8;

enum class GemvBug { none, missing_sync, wrong_row, off_by_one_shared };
enum class NormBug { none, missing_loop_sync, sync_under_if };
enum class CollOp { shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, any, all };

// y[rows] = W[rows x cols] * x[cols]; one warp per row, x staged in dynamic shared memory.
void gemv(const float* W, const float* x, float* y, int rows, int cols, GemvBug bug = GemvBug::none,
          simt::stream_t stream = nullptr);

// y = x * rsqrt(mean(x^2) + eps) * gamma, one 256-thread block per row.
void rmsnorm(const float* x, const float* gamma, float* y, int rows, int cols, float eps,
             NormBug bug = NormBug::none, simt::stream_t stream = nullptr);

// One warp: lanes in `mask` run `op` on vals[lane] / preds[lane]; out[lane] gets the result.
void collective(CollOp op, unsigned mask, int b, int width, const unsigned* vals, const int* preds,
                unsigned* out);

// Shuffles of 1..16-byte types (char, double, 16-byte struct) with __shfl_xor_sync;
// writes 4 words per lane: char, low/high of double, and a sum of the struct words.
void shuffle_types(unsigned* out);

// Exercises 3-D indices: out[linear global id] = packed (thread, block) coordinates.
void indices_3d(unsigned* out, dim3 grid, dim3 block);

// Every thread adds into counters: [0] int +1, [1] float +0.5, [2] max of ids, [3] min of ids.
void atomics(int* icount, float* fsum, unsigned* umax, unsigned* umin, int blocks);

// Per-block: every thread writes its id to dynamic shared memory only if odd;
// out[block*threads + t] = bit pattern of smem[t] (0xFFFFFFFF for untouched).
void smem_poison(unsigned* out, int blocks, int threads);

// Static __shared__ must be one copy per block: each block sums its ids through it.
void static_shared_sum(int* out, int blocks);

// Mixed fast-path shapes: even blocks never meet a collective, odd blocks do a
// block reduction; in every block thread 0 skips the warp shuffle the others do.
void mixed_fast_path(int* out, int blocks);

// fp16 / bf16 helpers: out[i] = hfma(a,a,hexp(a)) + warp sum of a as half.
void half_ops(const float* in, float* out, int n);

// Planted diagnostics; each throws simt::KernelError on the CPU backend.
void diag_divergent_sync();
void diag_exited_lane();
void diag_deadlock();
void diag_strict_exit();  // fine unless Config::strict_barriers
void diag_lane_not_in_mask();
void diag_mismatched_collective();
void diag_source_not_in_mask();
void diag_bad_launch();

}  // namespace simt_test
