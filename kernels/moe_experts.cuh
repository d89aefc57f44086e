// The launches of the grouped mixture-of-experts FFN (kernels/moe_experts.cu), declared apart so
// a mutant (kernels/mutants/moe_*.cu) can replace one of them and run the others as they are.
#pragma once

#include "common.cuh"

namespace DSK_NS {

// The scratch buffer of KernelTable::moe_experts, laid out as dsk::moe_scratch_bytes sizes it.
struct MoeScratch {
  int* offsets;   // [E + 1] expert e's slots are slots[offsets[e], offsets[e + 1])
  int* active;    // [E] the experts with a slot, in expert order; n_active of them
  int* n_active;  // [1]
  int* slots;     // [T k] slot indices t * k + j, grouped by expert, ascending within one
  int* kept;      // [T k] 1 where the slot's expert runs on it
  float* act;     // [T k, F] the slot's SwiGLU activation, f32 like the GEMVs' sums
  float* y;       // [T k, D] the slot's expert output, before the routing weight
};
MoeScratch moe_scratch(void* scratch, int T, int k, int E, int F);

// Every slot of ids [n] listed under its expert (moe_group_kernel).
void moe_group(const std::int32_t* ids, int n, int E, const MoeScratch& s);
// act[s, :] = silu(W_gate[e] x[s / k]) * (W_up[e] x[s / k]) in f32 for every listed slot s of expert e.
void moe_gate_up(const void* W_gate, const void* W_up, dsk::WType wt, const void* x, int k,
                 const MoeScratch& s, int n, int E, int F, int D);
// y[s, :] = W_down[e] act[s, :] in f32 for every listed slot s of expert e.
void moe_down(const void* W_down, dsk::WType wt, const MoeScratch& s, int n, int E, int F, int D);
// out[t, :] = half(sum_j weights[t, j] y[t k + j, :]) over kept slots, f32 in slot order; resid += it.
void moe_combine(const void* weights, void* out, void* resid, const MoeScratch& s, int T, int k, int D);

}  // namespace DSK_NS
