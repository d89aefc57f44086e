// Token embedding, f32: out[t, :] = wte[ids[t], :] + wpe[pos0 + t, :]. wte is the token table
// [vocab, cols]; wpe the learned position table [positions, cols] (GPT-2), or null for a model
// whose positions come later (RoPE), and then only the token's row is copied. Token t of this
// call sits at position pos0 + t: a decode step's one token is at the end of what came before.
//
// One thread per output element: a gather, bound by memory; adjacent threads read adjacent
// elements of the same table row (coalesced). The same file runs on the CPU (Driftscope's SIMT
// runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

constexpr int kThreads = 256;

__global__ void embedding_kernel(const int* ids, const float* wte, const float* wpe, float* out, int tokens,
                                 int cols, int pos0) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(tokens) * cols) return;
  const int t = static_cast<int>(i / cols), c = static_cast<int>(i % cols);
  float v = wte[static_cast<long>(ids[t]) * cols + c];
  if (wpe) v += wpe[static_cast<long>(pos0 + t) * cols + c];
  out[i] = v;
}

// Host entry point: host pointers in and out (what the candidate hands over).
void embedding_forward(float* out, const int* ids, const float* wte, const float* wpe, int tokens, int vocab,
                       int positions, int cols, int pos0) {
  const long n = static_cast<long>(tokens) * cols;
  simt::DeviceBuffer<int> d_ids(tokens);
  simt::DeviceBuffer<float> d_wte(static_cast<std::size_t>(vocab) * cols),
      d_wpe(wpe ? static_cast<std::size_t>(positions) * cols : 0), d_out(n);
  d_ids.upload(ids, tokens);
  d_wte.upload(wte, d_wte.size());
  if (wpe) d_wpe.upload(wpe, d_wpe.size());
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  simt::launch(embedding_kernel, dim3(blocks), dim3(kThreads), 0, nullptr, d_ids.data(), d_wte.data(),
               wpe ? d_wpe.data() : nullptr, d_out.data(), tokens, cols, pos0);
  simt::synchronize();
  d_out.download(out, n);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string embedding_unavailable() { return simt::device_error(); }
