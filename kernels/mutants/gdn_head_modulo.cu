// mutant:gdn-head-modulo: GDN value head h reads key head h % nk (the tiled ggml broadcast) where the model
// needs h / (nv / nk). The kernel of kernels/gdn.cu with that one change, marked "planted"; the rest is the
// production code as it was when the mutant was written. docs/mutants.md says where the harness must first
// catch it.
#include "../common.cuh"

namespace DSK_NS {
void gather_nonident(const float*, const std::int32_t*, int, float*, std::size_t, int);  // gdn.cu

namespace mutant_gdn_head_modulo {

using dsk::kGdnMaxDk;

__global__ void gdn_kernel(const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, const float* __restrict__ g,
                           const float* __restrict__ beta, const float* s_in,
                           const std::int32_t* __restrict__ ids, int rs_head,
                           const float* __restrict__ scratch, float* s_dst, float* __restrict__ out, int T,
                           int nk, int nv, int dk, int dv) {
  SIMT_DYNAMIC_SHARED(float, qk);  // [2 * dk]: this token's q and k for the key head
  float* qs = qk;
  float* ks = qk + dk;
  const int h = static_cast<int>(blockIdx.x), seq = static_cast<int>(blockIdx.y);
  const int j = static_cast<int>(threadIdx.x);
  const bool owner = j < dv;
  const int kh = h % nk;  // planted: h / (nv / nk) is right
  const std::size_t slot = static_cast<std::size_t>(nv) * dk * dv;
  const std::size_t head = static_cast<std::size_t>(h) * dk * dv;

  // Where this sequence's prior state lives (see the header).
  const float* s0;
  if (ids == nullptr) {
    s0 = s_in + seq * slot;  // plain and A
  } else if (ids[seq] == rs_head + seq) {
    s0 = s_dst + seq * slot;  // B identity: in place
  } else {
    s0 = scratch + seq * slot;  // B non-identity: the gathered copy
  }
  s0 += head;

  // 1. Snapshot the whole prior column into registers, before anything is written.
  float s[kGdnMaxDk];
  for (int i = 0; i < dk; ++i) s[i] = owner ? s0[static_cast<std::size_t>(i) * dv + j] : 0.0f;

  // 2. The recurrence, token by token, on the registers.
  for (int t = 0; t < T; ++t) {
    const std::size_t row = static_cast<std::size_t>(seq) * T + t;
    for (int i = j; i < dk; i += static_cast<int>(blockDim.x)) {
      qs[i] = q[row * nk * dk + static_cast<std::size_t>(kh) * dk + i];
      ks[i] = k[row * nk * dk + static_cast<std::size_t>(kh) * dk + i];
    }
    __syncthreads();
    if (owner) {
      const float decay = expf(g[row * nv + h]);
      const float b = beta[row * nv + h];
      for (int i = 0; i < dk; ++i) s[i] *= decay;  // S <- exp(g) S
      float m = 0.0f;                              // m_j = sum_i S[i][j] k[i]
      for (int i = 0; i < dk; ++i) m += s[i] * ks[i];
      const float delta = b * (v[row * nv * dv + static_cast<std::size_t>(h) * dv + j] - m);
      for (int i = 0; i < dk; ++i) s[i] += ks[i] * delta;  // S += k delta^T
      float o = 0.0f;                                      // o_j = sum_i S[i][j] q[i]
      for (int i = 0; i < dk; ++i) o += s[i] * qs[i];
      out[row * nv * dv + static_cast<std::size_t>(h) * dv + j] = o;
    }
    __syncthreads();  // qs / ks are restaged for the next token
  }

  // 3. The final column, written once (into the cache slot itself for A and B).
  if (owner) {
    float* d = s_dst + seq * slot + head;
    for (int i = 0; i < dk; ++i) d[static_cast<std::size_t>(i) * dv + j] = s[i];
  }
}

namespace {
void launch_gdn(const float* q, const float* k, const float* v, const float* g, const float* beta,
                const float* s_in, const std::int32_t* ids, int rs_head, const float* scratch, float* s_dst,
                float* out, int n_seqs, int T, int nk, int nv, int dk, int dv) {
  if (dk > kGdnMaxDk || nk <= 0 || nv % nk != 0)
    throw simt::KernelError("gdn: needs dk <= kGdnMaxDk and nv a multiple of nk");
  simt::launch(gdn_kernel, dim3(nv, n_seqs), dim3(round_up32(dv)),
               2 * static_cast<std::size_t>(dk) * sizeof(float), nullptr, q, k, v, g, beta, s_in, ids,
               rs_head, scratch, s_dst, out, T, nk, nv, dk, dv);
}
}  // namespace

void gdn(const float* q, const float* k, const float* v, const float* g, const float* beta,
         const float* state_in, float* state_out, float* out, int n_seqs, int T, int nk, int nv, int dk,
         int dv) {
  launch_gdn(q, k, v, g, beta, state_in, nullptr, 0, nullptr, state_out, out, n_seqs, T, nk, nv, dk, dv);
}

void gdn_inplace(const float* q, const float* k, const float* v, const float* g, const float* beta,
                 float* state, float* out, int n_seqs, int nk, int nv, int dk, int dv) {
  launch_gdn(q, k, v, g, beta, state, nullptr, 0, nullptr, state, out, n_seqs, 1, nk, nv, dk, dv);
}

void gdn_inplace_ids(const float* q, const float* k, const float* v, const float* g, const float* beta,
                     float* cache, const std::int32_t* ids, int rs_head, float* scratch, float* out,
                     int n_seqs, int nk, int nv, int dk, int dv) {
  const std::size_t slot = static_cast<std::size_t>(nv) * dk * dv;
  gather_nonident(cache, ids, rs_head, scratch, slot, n_seqs);
  launch_gdn(q, k, v, g, beta, cache, ids, rs_head, scratch, cache + static_cast<std::size_t>(rs_head) * slot,
             out, n_seqs, 1, nk, nv, dk, dv);
}

void plant(dsk::KernelTable& t) {
  t.gdn = gdn;
  t.gdn_inplace = gdn_inplace;
  t.gdn_inplace_ids = gdn_inplace_ids;
}

}  // namespace mutant_gdn_head_modulo
}  // namespace DSK_NS
