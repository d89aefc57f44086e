// Fused QKV projection: q, k and v of every token in one launch, bias added in f32.
//   q[t, r] = half(sum_c Wq[r, c] x[t, c] + bq[r])   (likewise k, v; biases optional)
// Same design as gemv.cu (a group of tokens' x staged in shared memory, rpw rows per warp,
// 16-byte weight loads, the partials summed in warp_sum's order): the grid covers
// q_rows + 2 * kv_rows rows and each row picks its segment. Separate weights are three
// pointers; a packed [q|k|v] weight is the same three pointers into one buffer.
#include "common.cuh"

namespace DSK_NS {

// Row `row` of the stacked [q | k | v] rows: its weight row, bias, output and the output's width.
template <class W>
struct QkvRow {
  W w;
  const float* b;
  __half* out;
  int rows, row;
};
template <class W>
__device__ inline QkvRow<W> qkv_row(int row, int q_rows, int kv_rows, int cols, W Wq, W Wk, W Wv,
                                    const float* bq, const float* bk, const float* bv, __half* q, __half* k,
                                    __half* v) {
  QkvRow<W> s{Wq, bq, q, q_rows, row};
  if (row >= q_rows + kv_rows) {
    s = {Wv, bv, v, kv_rows, row - q_rows - kv_rows};
  } else if (row >= q_rows) {
    s = {Wk, bk, k, kv_rows, row - q_rows};
  }
  s.w = weight_row(s.w, static_cast<std::size_t>(s.row), cols);
  return s;
}

// W: `const float*`, `const __half*`, `const __nv_bfloat16*` or QRows; q, k and v of one type.
template <class W>
__global__ void fused_qkv_kernel(W Wq, W Wk, W Wv, const float* __restrict__ bq, const float* __restrict__ bk,
                                 const float* __restrict__ bv, const __half* __restrict__ x,
                                 __half* __restrict__ q, __half* __restrict__ k, __half* __restrict__ v,
                                 int T, int q_rows, int kv_rows, int cols, int nt, int rpw) {
  SIMT_DYNAMIC_SHARED(float, smem);
  const int t0 = static_cast<int>(blockIdx.y) * nt;
  const int n = T - t0 < nt ? T - t0 : nt;  // tokens of this block
  float* xs = smem;                         // [nt][cols]
  stage_rows_f32(x, t0, n, cols, xs);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int all_rows = q_rows + 2 * kv_rows;
  const int row0 = static_cast<int>(blockIdx.x) * kGemvRows + warp * rpw;  // this warp's first row
  if (row0 >= all_rows) return;
  float acc[kGemvTokens];  // [rpw][n]
  for (int r = 0; r < rpw; ++r) {
    float* a = acc + r * n;
    if (row0 + r >= all_rows) {
      for (int p = 0; p < n; ++p) a[p] = 0.0f;
    } else {
      lane_dots(qkv_row(row0 + r, q_rows, kv_rows, cols, Wq, Wk, Wv, bq, bk, bv, q, k, v).w, xs, n, cols,
                lane, a);
    }
  }
  float* part =
      smem + static_cast<std::size_t>(nt) * cols + warp * rpw * nt * 32;  // this warp's [rpw * n][32]
  for (int i = 0; i < rpw * n; ++i) part[i * 32 + lane] = acc[i];
  __syncwarp();
  if (lane >= rpw * n || row0 + lane / n >= all_rows) return;
  const int p = lane % n;
  const QkvRow<W> s = qkv_row(row0 + lane / n, q_rows, kv_rows, cols, Wq, Wk, Wv, bq, bk, bv, q, k, v);
  const float sum = butterfly_sum32(part + lane * 32);
  const float b = s.b != nullptr ? s.b[s.row] : 0.0f;
  const float val = sum + b;  // the bias added to the f32 accumulator, one rounding at the store
  s.out[static_cast<std::size_t>(t0 + p) * s.rows + s.row] = __float2half_rn(val);
}

template <class W>
static void launch_qkv(W Wq, W Wk, W Wv, const float* bq, const float* bk, const float* bv, const void* x,
                       void* q, void* k, void* v, int T, int q_rows, int kv_rows, int cols) {
  const int rows = q_rows + 2 * kv_rows;
  const int nt = gemv_tokens(T, cols), rpw = gemv_rows_per_warp(nt);
  const dim3 grid((rows + kGemvRows - 1) / kGemvRows, (T + nt - 1) / nt), block(32 * (kGemvRows / rpw));
  simt::launch(fused_qkv_kernel<W>, grid, block, gemv_smem_bytes(nt, cols), nullptr, Wq, Wk, Wv, bq, bk, bv,
               static_cast<const __half*>(x), static_cast<__half*>(q), static_cast<__half*>(k),
               static_cast<__half*>(v), T, q_rows, kv_rows, cols, nt, rpw);
}

void fused_qkv(const void* Wq, const void* Wk, const void* Wv, dsk::WType wt, const float* bq,
               const float* bk, const float* bv, const void* x, void* q, void* k, void* v, int T, int q_rows,
               int kv_rows, int cols) {
  with_weight(Wq, wt, cols, [&](auto wq) {
    launch_qkv(wq, same_kind(wq, Wk), same_kind(wq, Wv), bq, bk, bv, x, q, k, v, T, q_rows, kv_rows, cols);
  });
}

}  // namespace DSK_NS
