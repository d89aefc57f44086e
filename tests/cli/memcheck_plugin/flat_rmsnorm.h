#pragma once

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w over host pointers, one thread per element
// of a flat grid of 256-thread blocks with no `idx < rows * cols` guard on the store: at a step of
// fewer elements than the grid has threads (a one-token decode step) the rest store past `out`.
// `guarded`: with the guard. `free_weight` false: the device copy of `w` is never freed (a leak of
// one block per call).
// The same RMSNorm, one block per row of `cols` (<= 1024) threads, every thread storing the row's
// 1/rms to one shared float: correct, and a benign same-value write-write race.
void row_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps);
// The same RMSNorm, a thread per row reading it as float4: a load past the row at a width that is
// not a multiple of 4.
void vec4_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps);
void flat_rmsnorm(float* out, const float* x, const float* w, int rows, int cols, float eps,
                  bool guarded = false, bool free_weight = true);
