// GEMV with an optional bias and an optional chain-add epilogue, for decode- and prefill-sized T:
//   y[t, r] = sum_c W[r, c] * x[t, c] (+ bias[r])            f32 accumulation
//   resid[t, r] = half(resid[t, r] + y[t, r])                 (chain-add, in place)
// kGemvRows output rows per block; blockIdx.y picks a group of nt tokens (gemv_tokens: up to
// kGemvTokens, as shared memory allows), and each warp computes rpw rows (gemv_rows_per_warp: 4
// at decode, 1 for 5 or more tokens). The block stages its tokens' x rows in shared memory as
// f32; each warp streams its weight rows with 16-byte loads, every lane keeping one partial per
// (row, token) (lane_dots). The partials meet in shared memory, and lane i sums the 32 of pair i
// in warp_sum's order (butterfly_sum32), adds the bias in f32 and writes y as f16. With `resid`
// set, an epilogue adds y into the residual stream: o_proj produces attn_out AND residual_1,
// down produces down AND residual_2 in a single launch.
#include "common.cuh"

namespace DSK_NS {

// W: `const float*`, `const __half*`, `const __nv_bfloat16*` or a quantized matrix's QRows.
template <class W>
__global__ void gemv_kernel(W Wt, const __half* __restrict__ x, const float* __restrict__ bias,
                            __half* __restrict__ y, __half* __restrict__ resid, int T, int rows, int cols,
                            int nt, int rpw) {
  SIMT_DYNAMIC_SHARED(float, smem);
  const int t0 = static_cast<int>(blockIdx.y) * nt;
  const int n = T - t0 < nt ? T - t0 : nt;  // tokens of this block
  float* xs = smem;                         // [nt][cols]
  stage_rows_f32(x, t0, n, cols, xs);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int row0 = static_cast<int>(blockIdx.x) * kGemvRows + warp * rpw;  // this warp's first row
  float acc[kGemvTokens];                                                  // [rpw][n]
  for (int q = 0; q < rpw; ++q) {
    const int row = row0 + q;
    float* a = acc + q * n;
    if (row >= rows) {
      for (int p = 0; p < n; ++p) a[p] = 0.0f;
    } else {
      lane_dots(weight_row(Wt, row, cols), xs, n, cols, lane, a);
    }
  }
  float* part =
      smem + static_cast<std::size_t>(nt) * cols + warp * rpw * nt * 32;  // this warp's [rpw * n][32]
  for (int i = 0; i < rpw * n; ++i) part[i * 32 + lane] = acc[i];
  __syncwarp();
  __shared__ float y_f32[kGemvTokens][kGemvRows];  // the block's outputs before rounding, for the epilogue
  if (lane < rpw * n && row0 + lane / n < rows) {
    const int q = lane / n, p = lane % n, row = row0 + q;
    const float sum = butterfly_sum32(part + lane * 32);
    const float v = sum + (bias != nullptr ? bias[row] : 0.0f);
    y[static_cast<std::size_t>(t0 + p) * rows + row] = __float2half_rn(v);
    y_f32[p][warp * rpw + q] = v;
  }
  if (resid == nullptr) return;  // uniform over the block

  // Chain-add epilogue: one thread per (token, row) of this block adds the projection output into
  // the residual stream in place. Every thread reads before any writes, so the in-place add is
  // race-free.
  __syncthreads();
  const int tid = static_cast<int>(threadIdx.x);
  const int p = tid / kGemvRows, r = tid % kGemvRows;
  const int idx = static_cast<int>(blockIdx.x) * kGemvRows + r;
  const bool adds = p < n && idx < rows;
  const std::size_t ro =
      adds ? static_cast<std::size_t>(t0 + p) * rows + static_cast<std::size_t>(idx) : std::size_t{0};
  const float v = adds ? y_f32[p][r] : 0.0f;  // the f32 projection output, not its f16 rounding
  const float sum = adds ? __half2float(resid[ro]) + v : 0.0f;
  __syncthreads();
  if (adds) resid[ro] = __float2half_rn(sum);
}

template <class W>
static void launch_gemv(W Wt, const void* x, const float* bias, void* y, void* resid, int T, int rows,
                        int cols) {
  const int nt = gemv_tokens(T, cols), rpw = gemv_rows_per_warp(nt);
  const int warps = kGemvRows / rpw;
  const dim3 grid((rows + kGemvRows - 1) / kGemvRows, (T + nt - 1) / nt), block(32 * warps);
  simt::launch(gemv_kernel<W>, grid, block, gemv_smem_bytes(nt, cols), nullptr, Wt,
               static_cast<const __half*>(x), bias, static_cast<__half*>(y), static_cast<__half*>(resid), T,
               rows, cols, nt, rpw);
}

void gemv(const void* W, dsk::WType wt, const void* x, const float* bias, void* y, void* resid, int T,
          int rows, int cols) {
  with_weight(W, wt, cols, [&](auto w) { launch_gemv(w, x, bias, y, resid, T, rows, cols); });
}

}  // namespace DSK_NS
