// Causal depthwise conv + SiLU of a Gated DeltaNet layer (the conv stage of Qwen3.5 / Qwen3-Next),
// f32, with the decode cache it keeps: for channel c and token t of the call,
//   out[t, c] = silu( sum_i w[c, i] * window[S + t - (K - 1) + i, c] ),  i = 0 .. K - 1,
// window = [state (S rows, oldest first) | x (tokens rows)], silu(a) = a / (1 + exp(-a)); tap K - 1
// multiplies the current token. `state` [S, channels] comes in holding the sequence's last S raw
// inputs (zeros at its start) and goes out holding the window's last S rows (S is K - 1 as
// llama.cpp keeps it, or K as HF does).
//
// One thread per channel: each walks its channel's window alone, so no barrier is needed. The same
// file runs on the CPU (Driftscope's SIMT runtime) and, built by nvcc, on a GPU.
#include "simt/simt.h"

__global__ void conv_kernel(float* out, float* next_state, const float* state, const float* x, const float* w,
                            int tokens, int channels, int taps, int state_rows) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  // Row r of the window: a state row before the call's tokens, then the tokens.
  const auto window = [&](int r) {
    return r < state_rows ? state[static_cast<long>(r) * channels + c]
                          : x[static_cast<long>(r - state_rows) * channels + c];
  };
  for (int t = 0; t < tokens; ++t) {
    float a = 0.0f;
    for (int i = 0; i < taps; ++i) a += w[c * taps + i] * window(state_rows + t - (taps - 1) + i);
    out[static_cast<long>(t) * channels + c] = a / (1.0f + expf(-a));
  }
  for (int r = 0; r < state_rows; ++r) next_state[static_cast<long>(r) * channels + c] = window(tokens + r);
}

// Host entry point: host pointers in and out (what the candidate hands over).
void conv_forward(float* out, float* state, const float* x, const float* w, int tokens, int channels,
                  int taps, int state_rows) {
  const std::size_t nx = static_cast<std::size_t>(tokens) * channels;
  const std::size_t ns = static_cast<std::size_t>(state_rows) * channels;
  simt::DeviceBuffer<float> d_x(nx), d_w(static_cast<std::size_t>(channels) * taps), d_state(ns), d_next(ns),
      d_out(nx);
  d_x.upload(x, nx);
  d_w.upload(w, static_cast<std::size_t>(channels) * taps);
  d_state.upload(state, ns);
  simt::launch(conv_kernel, dim3((channels + 127) / 128), dim3(128), 0, nullptr, d_out.data(), d_next.data(),
               d_state.data(), d_x.data(), d_w.data(), tokens, channels, taps, state_rows);
  simt::synchronize();
  d_out.download(out, nx);
  d_next.download(state, ns);
}

// Empty when this build can run here; otherwise why not (the CUDA build without a GPU).
std::string conv_unavailable() { return simt::device_error(); }
