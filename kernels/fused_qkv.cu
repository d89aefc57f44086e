// Fused QKV projection: q, k and v of every token in one launch, bias added in f32.
//   q[t, r] = half(sum_c Wq[r, c] x[t, c] + bq[r])   (likewise k, v; biases optional)
// Same design as gemv.cu (x staged in shared memory, one warp per output row, 16-byte
// weight loads): the grid covers q_rows + 2 * kv_rows rows and each warp picks its
// segment. Separate weights are three pointers; a packed [q|k|v] weight is the same three
// pointers into one buffer.
#include "common.cuh"

namespace DSK_NS {

template <class W>
__global__ void fused_qkv_kernel(const W* __restrict__ Wq, const W* __restrict__ Wk, const W* __restrict__ Wv,
                                 const float* __restrict__ bq, const float* __restrict__ bk,
                                 const float* __restrict__ bv, const __half* __restrict__ x,
                                 __half* __restrict__ q, __half* __restrict__ k, __half* __restrict__ v,
                                 int q_rows, int kv_rows, int cols, int bug) {
  SIMT_DYNAMIC_SHARED(float, xs);
  const int t = static_cast<int>(blockIdx.y);
  stage_row_f32(x, t, cols, xs);

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int row = static_cast<int>(blockIdx.x) * kGemvWarps + warp;
  if (row >= q_rows + 2 * kv_rows) return;
  const W* Wseg = Wq;
  const float* bseg = bq;
  __half* out = q;
  int n = q_rows;
  if (row >= q_rows + kv_rows) {
    row -= q_rows + kv_rows;
    Wseg = Wv, bseg = bv, out = v, n = kv_rows;
  } else if (row >= q_rows) {
    row -= q_rows;
    Wseg = Wk, bseg = bk, out = k, n = kv_rows;
  }
  const float acc = warp_dot(Wseg + static_cast<std::size_t>(row) * cols, xs, cols, lane);
  if (lane != 0) return;
  const float b = bseg != nullptr ? bseg[row] : 0.0f;
  // Planted (seeds/004 #6): the accumulator is rounded to half before the bias add.
  const float val = bug == dsk::kBugHalfBeforeBias ? __half2float(__float2half_rn(acc)) + b : acc + b;
  out[static_cast<std::size_t>(t) * n + row] = __float2half_rn(val);
}

template <class W>
static void launch_qkv(const void* Wq, const void* Wk, const void* Wv, const float* bq, const float* bk,
                       const float* bv, const void* x, void* q, void* k, void* v, int T, int q_rows,
                       int kv_rows, int cols, int bug) {
  const int rows = q_rows + 2 * kv_rows;
  const dim3 grid((rows + kGemvWarps - 1) / kGemvWarps, T), block(32 * kGemvWarps);
  simt::launch(fused_qkv_kernel<W>, grid, block, static_cast<std::size_t>(cols) * sizeof(float), nullptr,
               static_cast<const W*>(Wq), static_cast<const W*>(Wk), static_cast<const W*>(Wv), bq, bk, bv,
               static_cast<const __half*>(x), static_cast<__half*>(q), static_cast<__half*>(k),
               static_cast<__half*>(v), q_rows, kv_rows, cols, bug);
}

void fused_qkv(const void* Wq, const void* Wk, const void* Wv, dsk::WType wt, const float* bq,
               const float* bk, const float* bv, const void* x, void* q, void* k, void* v, int T, int q_rows,
               int kv_rows, int cols, int bug) {
  switch (wt) {
    case dsk::WType::f32:
      launch_qkv<float>(Wq, Wk, Wv, bq, bk, bv, x, q, k, v, T, q_rows, kv_rows, cols, bug);
      break;
    case dsk::WType::f16:
      launch_qkv<__half>(Wq, Wk, Wv, bq, bk, bv, x, q, k, v, T, q_rows, kv_rows, cols, bug);
      break;
    case dsk::WType::bf16:
      launch_qkv<__nv_bfloat16>(Wq, Wk, Wv, bq, bk, bv, x, q, k, v, T, q_rows, kv_rows, cols, bug);
      break;
  }
}

}  // namespace DSK_NS
