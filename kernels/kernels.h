// Host-side interface of the fused decoder kernels in kernels/*.cu.
//
// The same .cu files are built twice: by g++ through the SIMT runtime (namespace dsk_simt,
// every CUDA thread a fiber on the CPU) and by nvcc (namespace dsk_cuda, a real GPU). Each
// build exports one KernelTable; the candidate host code (candidates/gpu) only talks to a
// table, so the simt and cuda candidates share every line of host code. The mutants (kernels
// with a planted bug, docs/mutants.md) live apart, in kernels/mutants/: each is a patch of these
// kernels compiled into a namespace of its own, and a table with some of these entries replaced
// (mutants/mutants.h); the kernels here carry none.
//
// Conventions: every pointer handed to a kernel is a device pointer. Activations are f16
// ([rows, width] row-major, width innermost). Matrices are [out, in] in their stored type
// (f32, f16, bf16 or a GGUF block-quantized type, WType) and accumulate in f32. Norm weights and biases are
// f32 vectors; a null bias means "no bias". This header is C++17 (nvcc compiles the kernels as C++17).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dsk {

// Weight storage types the projection kernels read: f32, f16, bf16, and GGUF's block-quantized
// types, decoded 32 elements at a time inside the kernel (quant_rows.cuh), never into a copy.
enum class WType : int {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  q8_0,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  iq4_nl,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  iq4_xs,
};

#if defined(__CUDACC__)
#define DSK_HOST_DEVICE __host__ __device__
#else
#define DSK_HOST_DEVICE
#endif

// A block-quantized type's block: elements and bytes (ggml's layouts); {1, element size} for the
// float types.
struct QuantBlock {
  int elems, bytes;
};
DSK_HOST_DEVICE inline QuantBlock quant_block(WType t) {
  switch (t) {
    case WType::f32: return {1, 4};
    case WType::f16:
    case WType::bf16: return {1, 2};
    case WType::q8_0: return {32, 34};
    case WType::q4_0: return {32, 18};
    case WType::q4_1: return {32, 20};
    case WType::q5_0: return {32, 22};
    case WType::q5_1: return {32, 24};
    case WType::iq4_nl: return {32, 18};
    case WType::q2_k: return {256, 84};
    case WType::q3_k: return {256, 110};
    case WType::q4_k: return {256, 144};
    case WType::q5_k: return {256, 176};
    case WType::q6_k: return {256, 210};
    case WType::iq4_xs: return {256, 136};
  }
  return {1, 4};
}
inline bool is_quantized(WType t) { return quant_block(t).elems > 1; }
// Bytes of one row of `cols` elements (whole blocks for the quantized types).
inline std::size_t weight_row_bytes(WType t, int cols) {
  const QuantBlock q = quant_block(t);
  return static_cast<std::size_t>(cols / q.elems) * static_cast<std::size_t>(q.bytes);
}

// Output rows per block of the GEMV kernels (gemv.cu, fused_qkv.cu: up to 4 per warp; gdn_gates.cu:
// one warp each).
inline constexpr int kGemvRows = 8;
// Largest GDN key head dim (one state column lives in registers) and SSM conv width.
inline constexpr int kGdnMaxDk = 256;
inline constexpr int kConvMaxK = 8;

// Mixture-of-experts routing rules (kernels/moe_route.cu), as the reference's MoeRouting:
// softmax over every router logit then the top k (Qwen3-MoE), or the top k logits then a softmax
// over those k (Mixtral).
enum class MoeRule : int { softmax_topk = 0, topk_softmax = 1 };
// Largest top-k the routing kernel keeps (its chosen experts sit in a fixed shared array) and
// largest expert count it ranks: what the simt / cuda candidates declare to the capability gate.
inline constexpr int kMoeMaxTopK = 16;
inline constexpr int kMoeMaxExperts = 1024;
// Device scratch the grouped expert kernels (kernels/moe_experts.cu) need for T tokens of k
// experts each: the per-expert slot lists, each slot's SwiGLU activation (f32 [T k, F]) and its
// expert's output before the combine (f32 [T k, D]), each part 256-byte aligned.
inline std::size_t moe_scratch_bytes(int T, int k, int E, int F, int D) {
  const auto part = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t slots = static_cast<std::size_t>(T) * static_cast<std::size_t>(k);
  return part((2 * static_cast<std::size_t>(E) + 2 + 2 * slots) * 4) +
         part(slots * static_cast<std::size_t>(F) * 4) + part(slots * static_cast<std::size_t>(D) * 4);
}

struct KernelTable {
  const char* backend;  // "simt" or "cuda"
  // Empty when kernels can run; otherwise why not ("no CUDA device: ...").
  std::string (*device_error)();
  void* (*alloc)(std::size_t bytes);
  void (*release)(void* p);
  void (*to_device)(void* dst, const void* src, std::size_t bytes);
  void (*to_host)(void* dst, const void* src, std::size_t bytes);
  void (*device_copy)(void* dst, const void* src, std::size_t bytes);
  void (*synchronize)();

  // out[t, :] = half(table[tokens[t], :] + pos[pos0 + t, :]); table [vocab, D], pos f32
  // [max_positions, D] (learned absolute positions) or null.
  void (*embedding)(const void* table, WType wt, const std::int32_t* tokens, const float* pos, int pos0,
                    void* out, int T, int D);
  // y[r, :] = half(x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * (w_offset + w)); one block per row.
  // w_offset 0, or 1 for Qwen3-Next's (1 + w) norms.
  void (*rmsnorm)(const void* x, const float* w, float w_offset, void* y, int rows, int width, float eps);
  // y[r, :] = half((x[r, :] - mean) * rsqrt(var + eps) * w + b), biased variance; one block per row.
  void (*layernorm)(const void* x, const float* w, const float* b, void* y, int rows, int width, float eps);
  // y[t, :] = half(W x[t, :] + bias), f32 accumulation, the bias added in f32 before the
  // cast. With `resid` set (chain-add), also resid[t, :] = half(resid + y) in place: the
  // residual stream update fused as the epilogue. x: [T, cols], W: [rows, cols], y: [T, rows].
  void (*gemv)(const void* W, WType wt, const void* x, const float* bias, void* y, void* resid, int T,
               int rows, int cols);
  // q/k/v[t, :] = half(Wq/Wk/Wv x[t, :] + b) in one launch. Separate layout: three weight
  // pointers; packed layout ([q_rows + 2 kv_rows, cols] in one buffer): pass Wk = Wq +
  // q_rows * cols and Wv = Wk + kv_rows * cols. Biases may be null.
  void (*fused_qkv)(const void* Wq, const void* Wk, const void* Wv, WType wt, const float* bq,
                    const float* bk, const float* bv, const void* x, void* q, void* k, void* v, int T,
                    int q_rows, int kv_rows, int cols);
  // Per-head RMSNorm of q [T, n_q * hd] and k [T, n_kv * hd] into qn / kn, weights (w_offset + w);
  // one warp per head.
  void (*qk_norm)(const void* q, const void* k, const float* wq, const float* wk, float w_offset, void* qn,
                  void* kn, int T, int n_q, int n_kv, int head_dim, float eps);
  // Rotary embedding in place on q and k (one launch), tokens at positions pos0.. . The
  // first rotary_dim of each head rotate; neox pairs (i, i + R/2), normal pairs (2i, 2i+1).
  // freq_factors: f32 [rotary_dim / 2] dividing each pair's frequency (Llama-3 / linear RoPE
  // scaling), or null.
  void (*rope)(void* q, void* k, int T, int n_q, int n_kv, int head_dim, int rotary_dim, int pos0,
               float theta, const float* freq_factors, bool neox);
  // Causal GQA (or MHA: n_kv == n_q) attention: q [T, n_q * hd] at positions pos0.., caches
  // [P, n_kv * hd] with P = pos0 + T; rows of q and of the caches q_ld and kv_ld elements
  // apart (n_q * hd and n_kv * hd when packed; 3 D for views into GPT-2's [q | k | v] rows);
  // one block per (token, head); out [T, n_q * hd].
  void (*attention)(const void* q, const void* k_cache, const void* v_cache, void* out, int T, int P,
                    int pos0, int n_q, int n_kv, int head_dim, int q_ld, int kv_ld);
  // act[t, i] = half(silu(g) * u), g = gate[t * ld + i] (+ b_gate[i] when has_bias), likewise
  // u; ld is the row stride of gate / up (F, or 2F for a packed [gate | up] buffer). The
  // candidate's gate_proj and up_proj GEMVs already add the bias, so it passes has_bias = false.
  void (*swiglu)(const void* gate, const void* up, const float* b_gate, const float* b_up, bool has_bias,
                 void* act, int T, int F, int ld);
  // y[i] = half(gelu_tanh(x[i])) over n elements (GPT-2's gelu_new); in place allowed.
  void (*gelu)(const void* x, void* y, int n);
  // Qwen3-Next's attention output gate: y[i] = half(attn[i] * sigmoid(gate[i])) over n elements.
  void (*attn_gate)(const void* attn, const void* gate, void* y, int n);

  // ---- Gated DeltaNet layer, f16 activations like the kernels above.
  // beta[t, h] = half(sigmoid(W_beta x)), g[t, h] = half(a_neg[h] * softplus(W_alpha x + dt_bias[h]));
  // W_beta / W_alpha [nv, cols], x [T, cols], beta / g [T, nv].
  void (*gdn_gates)(const void* W_beta, const void* W_alpha, WType wt, const float* a_neg,
                    const float* dt_bias, const void* x, void* beta, void* g, int T, int nv, int cols);
  // q / k [T, n_heads * hd] = the per-head L2-normalised column ranges [0, n_heads hd) and
  // [n_heads hd, 2 n_heads hd) of x (row stride ld), q also scaled by q_scale.
  void (*l2norm)(const void* x, int ld, void* q, void* k, int T, int n_heads, int head_dim, float q_scale);
  // y[t, h, :] = half(w * RMSNorm(o[t, h, :]) * silu(z[t, h, :])), o / z / y [T, n_heads * hd], w f32 [hd].
  void (*gated_rmsnorm)(const void* o, const void* z, const float* w, void* y, int T, int n_heads,
                        int head_dim, float eps);

  // ---- Gated DeltaNet recurrence and conv (kernels/gdn.cu, kernels/ssm_conv.cu), f32; layouts in
  // those files.
  // Plain GDN recurrence over T tokens of n_seqs sequences: prior states state_in
  // [n_seqs, nv, dk, dv], final states into the separate state_out, outputs out [n_seqs, T, nv*dv].
  void (*gdn)(const float* q, const float* k, const float* v, const float* g, const float* beta,
              const float* state_in, float* state_out, float* out, int n_seqs, int T, int nk, int nv, int dk,
              int dv);
  // Op A (one token): state [n_seqs, nv, dk, dv] (the cache at rs_head) read and rewritten in place.
  void (*gdn_inplace)(const float* q, const float* k, const float* v, const float* g, const float* beta,
                      float* state, float* out, int n_seqs, int nk, int nv, int dk, int dv);
  // Op B (one token): prior state of sequence s from cache[ids[s]], final state into
  // cache[rs_head + s]. scratch: n_seqs slots for the non-identity gather.
  void (*gdn_inplace_ids)(const float* q, const float* k, const float* v, const float* g, const float* beta,
                          float* cache, const std::int32_t* ids, int rs_head, float* scratch, float* out,
                          int n_seqs, int nk, int nv, int dk, int dv);
  // Plain SSM conv over a pre-concatenated window sx [n_seqs, C, K-1+T] -> y [n_seqs, T, C].
  void (*ssm_conv)(const float* sx, const float* w, float* y, int n_seqs, int T, int C, int K, bool silu);
  // Op C: window = [state_in (K-1 taps) | x], y = conv (+SiLU), shifted ring into state_dst.
  // state_in / state_dst: [n_seqs, C, K-1]; x, y: [n_seqs, C].
  void (*ssm_conv_update)(const float* state_in, const float* w, const float* x, float* state_dst, float* y,
                          int n_seqs, int C, int K, bool silu);
  // Op D: C reading sequence s's taps from cache[ids[s]], ring into cache[rs_head + s].
  void (*ssm_conv_update_ids)(float* cache, const std::int32_t* ids, int rs_head, float* scratch,
                              const float* w, const float* x, float* y, int n_seqs, int C, int K, bool silu);

  // ---- Mixture-of-experts FFN (docs/moe.md), f16 activations.
  // Fused routing (moe_route.cu), one block per token: logits[t, :] = half(W_router x[t, :])
  // (W_router [E, cols]), then the rule's top k of the f32 logits, ranked by probability
  // (softmax_topk) or logit (topk_softmax), equal values to the lower expert index, into
  // ids[t, 0:k] (int32, highest first) and weights[t, 0:k] = half(routing weight): p_e (divided by
  // the chosen p's sum when norm_topk) or the softmax over the k chosen logits.
  // k <= kMoeMaxTopK, E <= kMoeMaxExperts.
  void (*moe_route)(const void* W_router, WType wt, const void* x, void* logits, std::int32_t* ids,
                    void* weights, int T, int E, int cols, int k, MoeRule rule, bool norm_topk);
  // Grouped experts and combine (moe_experts.cu): the T k (token, slot) pairs grouped by expert, each
  // expert's SwiGLU MLP run once over its tokens (W_gate / W_up [E, F, D] stacked in wt, W_down
  // [E, D, F] in wt_down: a Q4_K_M file keeps some layers' down in Q6_K), and out[t, :] = half(sum_j
  // weights[t, j] * y_j) accumulated in f32 in slot order; with `resid`, also resid[t, :] = half(resid + that
  // f32 sum) in place. ids int32 [T, k] (an id outside [0, E) contributes nothing), weights f16 [T, k], x /
  // out / resid f16 [T, D]; scratch: moe_scratch_bytes(T, k, E, F, D).
  void (*moe_experts)(const void* W_gate, const void* W_up, const void* W_down, WType wt, WType wt_down,
                      const void* x, const std::int32_t* ids, const void* weights, void* out, void* resid,
                      void* scratch, int T, int k, int E, int F, int D);
  // Qwen3-Next's shared-expert gate and sum (moe_shexp.cu), one block per token: g = sigmoid(W_gate x[t, :])
  // in f32 (W_gate [1, D] in wt, x = ffn_norm), gate[t] = half(g), ffn_out[t, :] = half(moe_out[t, :] +
  // g * shexp_out[t, :]) in f32; with `resid`, also resid[t, :] = half(resid + that f32 sum) in place.
  // gate f16 [T, 1]; x / moe_out / shexp_out / ffn_out / resid f16 [T, D]. The shared expert's MLP
  // itself runs on moe_experts as one expert of top-1 at weight 1.
  void (*moe_shexp_gate_add)(const void* W_gate, WType wt, const void* x, const void* moe_out,
                             const void* shexp_out, void* gate, void* ffn_out, void* resid, int T, int D);
};

}  // namespace dsk

namespace dsk_simt {
const dsk::KernelTable& table();
}
namespace dsk_cuda {
const dsk::KernelTable& table();
}
