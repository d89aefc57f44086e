// Grouped mixture-of-experts FFN with a weighted f32 combine (docs/moe.md). The T tokens chose k
// experts each (moe_route.cu): T k slots s = t k + j. Each expert runs once over all the slots
// routed to it, so its weights are read once per launch however many tokens chose it:
//   act[s, :] = silu(W_gate[e] x[t, :]) * (W_up[e] x[t, :])            f32; e = ids[s], t = s / k
//   y[s, :]   = W_down[e] act[s, :]                                     f32
//   out[t, :] = half(sum_j weights[t, j] * y[t k + j, :])               f32, slot order
//   resid[t, :] = half(resid[t, :] + that f32 sum)                      with resid (chain-add)
// Four launches:
//   moe_group_kernel     one block: count each expert's slots, offsets, the active experts, and
//                        the slot lists in ascending slot order (one thread per expert)
//   moe_grouped_kernel   grid (row blocks of kGemvRows, min(E, T k)): blockIdx.y is the y-th
//                        active expert (blocks past n_active leave at once); its slots taken nt at
//                        a time, their source rows gathered into shared memory as f32, one warp
//                        per output row (common.cuh's lane_dots, then warp_sum). gate_up runs it
//                        with the SwiGLU epilogue over x; down without it over act, into y.
//   moe_combine_kernel   one thread per (t, d): the k weighted outputs added in f32 in slot
//                        order, the order the reference sums them (reference/blocks/moe.cpp)
// An id outside [0, E) is in no list: its slot is not kept and adds nothing.
#include "moe_experts.cuh"

namespace DSK_NS {

namespace {
constexpr int kMoeThreads = 256;
std::size_t part_bytes(std::size_t b) { return (b + 255) / 256 * 256; }

// Slots one grouped block stages at once: as many source rows as 48 KiB of shared memory holds.
int grouped_tokens(int cols) {
  const int fit = static_cast<int>(48 * 1024 / (static_cast<std::size_t>(cols) * sizeof(float)));
  return fit < 1 ? 1 : fit < kGemvTokens ? fit : kGemvTokens;
}
}  // namespace

MoeScratch moe_scratch(void* scratch, int T, int k, int E, int F) {
  const std::size_t n = static_cast<std::size_t>(T) * static_cast<std::size_t>(k);
  int* ints = static_cast<int*>(scratch);
  char* act = static_cast<char*>(scratch) + part_bytes((2 * static_cast<std::size_t>(E) + 2 + 2 * n) * 4);
  char* y = act + part_bytes(n * static_cast<std::size_t>(F) * 4);
  return {ints,
          ints + E + 1,
          ints + 2 * E + 1,
          ints + 2 * E + 2,
          ints + 2 * E + 2 + n,
          reinterpret_cast<float*>(act),
          reinterpret_cast<float*>(y)};
}

__global__ void moe_group_kernel(const std::int32_t* __restrict__ ids, int n, int E, MoeScratch s) {
  __shared__ int count[dsk::kMoeMaxExperts];
  const int tid = static_cast<int>(threadIdx.x), bd = static_cast<int>(blockDim.x);
  for (int e = tid; e < E; e += bd) {
    int c = 0;
    for (int i = 0; i < n; ++i) c += ids[i] == e ? 1 : 0;
    count[e] = c;
  }
  for (int i = tid; i < n; i += bd) s.kept[i] = 0;
  __syncthreads();
  if (tid == 0) {
    int at = 0, na = 0;
    for (int e = 0; e < E; ++e) {
      s.offsets[e] = at;
      at += count[e];
      if (count[e] > 0) s.active[na++] = e;
    }
    s.offsets[E] = at;
    *s.n_active = na;
  }
  __syncthreads();
  for (int e = tid; e < E; e += bd) {
    int at = s.offsets[e];
    for (int i = 0; i < n; ++i)
      if (ids[i] == e) {
        s.slots[at++] = i;
        s.kept[i] = 1;
      }
  }
}

// One block: rows [blockIdx.x kGemvRows, +kGemvRows) of expert active[blockIdx.y]'s matrix (Wa,
// and Wb for SwiGLU's up half) against the source rows src[slot / src_div] of its slots.
template <class W, class S, bool kSwiGLU>
__global__ void moe_grouped_kernel(W Wa, W Wb, const S* __restrict__ src, int src_div, MoeScratch s, int rows,
                                   int cols, int nt) {
  SIMT_DYNAMIC_SHARED(float, xs);  // [nt][cols]
  const int a = static_cast<int>(blockIdx.y);
  if (a >= *s.n_active) return;  // uniform over the block
  const int e = s.active[a], begin = s.offsets[e], end = s.offsets[e + 1];
  const int tid = static_cast<int>(threadIdx.x), bd = static_cast<int>(blockDim.x);
  const int warp = tid / 32, lane = tid % 32;
  const int row = static_cast<int>(blockIdx.x) * kGemvRows + warp;
  const std::size_t w_row = static_cast<std::size_t>(e) * rows + (row < rows ? row : 0);  // of the stack
  for (int s0 = begin; s0 < end; s0 += nt) {
    const int n = end - s0 < nt ? end - s0 : nt;
    __syncthreads();  // the previous group's rows read by every warp before they are replaced
    for (int i = tid; i < n * cols; i += bd) {
      const int p = i / cols, c = i % cols;
      xs[i] = to_f(src[static_cast<std::size_t>(s.slots[s0 + p] / src_div) * cols + c]);
    }
    __syncthreads();
    float acc_a[kGemvTokens], acc_b[kGemvTokens];
    for (int p = 0; p < kGemvTokens; ++p) acc_a[p] = acc_b[p] = 0.0f;
    if (row < rows) {
      lane_dots(weight_row(Wa, w_row, cols), xs, n, cols, lane, acc_a);
      if (kSwiGLU) lane_dots(weight_row(Wb, w_row, cols), xs, n, cols, lane, acc_b);
    }
    for (int p = 0; p < n; ++p) {
      const float g = warp_sum(acc_a[p]);
      const float u = kSwiGLU ? warp_sum(acc_b[p]) : 0.0f;
      if (lane != 0 || row >= rows) continue;
      const std::size_t o = static_cast<std::size_t>(s.slots[s0 + p]) * rows + row;
      if (kSwiGLU)
        s.act[o] = g / (1.0f + expf(-g)) * u;
      else
        s.y[o] = g;
    }
  }
}

__global__ void moe_combine_kernel(const __half* __restrict__ weights, MoeScratch s, __half* __restrict__ out,
                                   __half* __restrict__ resid, int T, int k, int D) {
  const int idx = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  if (idx >= T * D) return;
  const int t = idx / D, d = idx % D;
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) {
    const int slot = t * k + j;
    if (s.kept[slot] != 0) acc += __half2float(weights[slot]) * s.y[static_cast<std::size_t>(slot) * D + d];
  }
  out[idx] = __float2half_rn(acc);
  if (resid != nullptr) resid[idx] = __float2half_rn(__half2float(resid[idx]) + acc);
}

void moe_group(const std::int32_t* ids, int n, int E, const MoeScratch& s) {
  simt::launch(moe_group_kernel, dim3(1), dim3(kMoeThreads), 0, nullptr, ids, n, E, s);
}

template <class S, bool kSwiGLU, class W>
static void launch_grouped(W Wa, W Wb, const S* src, int src_div, const MoeScratch& s, int n, int E, int rows,
                           int cols) {
  const int nt = grouped_tokens(cols);
  const dim3 grid((rows + kGemvRows - 1) / kGemvRows, E < n ? E : n), block(32 * kGemvRows);
  simt::launch(moe_grouped_kernel<W, S, kSwiGLU>, grid, block,
               static_cast<std::size_t>(nt) * cols * sizeof(float), nullptr, Wa, Wb, src, src_div, s, rows,
               cols, nt);
}

template <class S, bool kSwiGLU>
static void grouped(const void* Wa, const void* Wb, dsk::WType wt, const S* src, int src_div,
                    const MoeScratch& s, int n, int E, int rows, int cols) {
  with_weight(Wa, wt, cols, [&](auto wa) {
    launch_grouped<S, kSwiGLU>(wa, same_kind(wa, Wb), src, src_div, s, n, E, rows, cols);
  });
}

void moe_gate_up(const void* W_gate, const void* W_up, dsk::WType wt, const void* x, int k,
                 const MoeScratch& s, int n, int E, int F, int D) {
  grouped<__half, true>(W_gate, W_up, wt, static_cast<const __half*>(x), k, s, n, E, F, D);
}

void moe_down(const void* W_down, dsk::WType wt, const MoeScratch& s, int n, int E, int F, int D) {
  grouped<float, false>(W_down, nullptr, wt, s.act, 1, s, n, E, D, F);
}

void moe_combine(const void* weights, void* out, void* resid, const MoeScratch& s, int T, int k, int D) {
  const int n = T * D;
  simt::launch(moe_combine_kernel, dim3((n + kMoeThreads - 1) / kMoeThreads), dim3(kMoeThreads), 0, nullptr,
               static_cast<const __half*>(weights), s, static_cast<__half*>(out), static_cast<__half*>(resid),
               T, k, D);
}

void moe_experts(const void* W_gate, const void* W_up, const void* W_down, dsk::WType wt, dsk::WType wt_down,
                 const void* x, const std::int32_t* ids, const void* weights, void* out, void* resid,
                 void* scratch, int T, int k, int E, int F, int D) {
  const int n = T * k;
  const MoeScratch s = moe_scratch(scratch, T, k, E, F);
  moe_group(ids, n, E, s);
  moe_gate_up(W_gate, W_up, wt, x, k, s, n, E, F, D);
  moe_down(W_down, wt_down, s, n, E, F, D);
  moe_combine(weights, out, resid, s, T, k, D);
}

}  // namespace DSK_NS
