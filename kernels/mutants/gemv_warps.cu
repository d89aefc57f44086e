// mutant:gemv-warps: the GEMV is written for kGemvRows / rpw warps per block and launched with half as many,
// so the rows of the missing warps are never computed. The kernel of kernels/gemv.cu with that one change,
// marked "planted"; the rest is the production code as it was when the mutant was written. docs/mutants.md
// says where the harness must first catch it.
#include "../common.cuh"

namespace DSK_NS {
namespace mutant_gemv_warps {

template <class W>
__global__ void gemv_kernel(const W* __restrict__ Wt, const __half* __restrict__ x,
                            const float* __restrict__ bias, __half* __restrict__ y,
                            __half* __restrict__ resid, int T, int rows, int cols, int nt, int rpw) {
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
      lane_dots(Wt + static_cast<std::size_t>(row) * cols, xs, n, cols, lane, a);
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
static void launch_gemv(const W* Wt, const void* x, const float* bias, void* y, void* resid, int T, int rows,
                        int cols) {
  const int nt = gemv_tokens(T, cols), rpw = gemv_rows_per_warp(nt);
  const int warps = kGemvRows / rpw / 2;  // planted: half the warps the kernel was written for
  const dim3 grid((rows + kGemvRows - 1) / kGemvRows, (T + nt - 1) / nt), block(32 * warps);
  simt::launch(gemv_kernel<W>, grid, block, gemv_smem_bytes(nt, cols), nullptr, Wt,
               static_cast<const __half*>(x), bias, static_cast<__half*>(y), static_cast<__half*>(resid), T,
               rows, cols, nt, rpw);
}

void gemv(const void* W, dsk::WType wt, const void* x, const float* bias, void* y, void* resid, int T,
          int rows, int cols) {
  switch (wt) {
    case dsk::WType::f32: launch_gemv(static_cast<const float*>(W), x, bias, y, resid, T, rows, cols); break;
    case dsk::WType::f16: launch_gemv(static_cast<const __half*>(W), x, bias, y, resid, T, rows, cols); break;
    case dsk::WType::bf16:
      launch_gemv(static_cast<const __nv_bfloat16*>(W), x, bias, y, resid, T, rows, cols);
      break;
  }
}

void plant(dsk::KernelTable& t) { t.gemv = gemv; }

}  // namespace mutant_gemv_warps
}  // namespace DSK_NS
