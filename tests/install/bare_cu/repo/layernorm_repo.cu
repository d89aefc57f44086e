// LayerNorm forward as kernel repositories keep it (written here, in the shape of a public
// dev/cuda file): two kernels behind a dispatch taking device pointers and B, T, C, its epsilon in
// a __constant__, and a main that checks them against the CPU and times them with events.
// tests/install/bare_cu/layernorm_wrapper.cu includes this file as it is to verify it in GPT-2.
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "repo_common.h"

__constant__ float layernorm_eps;

void layernorm_forward_cpu(float* out, const float* inp, const float* weight, const float* bias, int N,
                           int C) {
  for (int n = 0; n < N; n++) {
    const float* x = inp + n * C;
    float mean = 0.0f, var = 0.0f;
    for (int c = 0; c < C; c++) mean += x[c];
    mean /= C;
    for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    const float rstd = 1.0f / sqrtf(var + 1e-5f);
    for (int c = 0; c < C; c++) out[n * C + c] = (x[c] - mean) * rstd * weight[c] + bias[c];
  }
}

// kernel 1: a thread per row
__global__ void layernorm_rows_kernel(float* out, const float* inp, const float* weight, const float* bias,
                                      int N, int C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* x = inp + row * C;
  float mean = 0.0f, var = 0.0f;
  for (int c = 0; c < C; c++) mean += x[c];
  mean /= C;
  for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
  var /= C;
  const float rstd = rsqrtf(var + layernorm_eps);
  for (int c = 0; c < C; c++) out[row * C + c] = (x[c] - mean) * rstd * weight[c] + bias[c];
}

// kernel 2: a warp per row, the sums folded by shuffles
__global__ void layernorm_warp_kernel(float* out, const float* inp, const float* weight, const float* bias,
                                      int N, int C) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + row * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += 32) sum += x[c];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
  const float mean = sum / C;
  float sq = 0.0f;
  for (int c = lane; c < C; c += 32) sq += (x[c] - mean) * (x[c] - mean);
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffff, sq, o);
  const float rstd = rsqrtf(sq / C + layernorm_eps);
  for (int c = lane; c < C; c += 32) out[row * C + c] = (x[c] - mean) * rstd * weight[c] + bias[c];
}

void layernorm_forward(int kernel_num, float* out, const float* inp, const float* weight, const float* bias,
                       int B, int T, int C, int block_size) {
  const float eps = 1e-5f;
  cudaCheck(cudaMemcpyToSymbol(layernorm_eps, &eps, sizeof(eps)));
  const int N = B * T;
  switch (kernel_num) {
    case 1:
      layernorm_rows_kernel<<<ceil_div(N, block_size), block_size>>>(out, inp, weight, bias, N, C);
      break;
    case 2:
      assert(block_size % 32 == 0);
      layernorm_warp_kernel<<<ceil_div(N * 32, block_size), block_size>>>(out, inp, weight, bias, N, C);
      break;
    default: std::printf("Invalid kernel number\n"); std::exit(1);
  }
  cudaCheck(cudaGetLastError());
}

int main(int argc, char** argv) {
  const int B = 8, T = 1024, C = 768;
  const int kernel_num = argc > 1 ? std::atoi(argv[1]) : 2;
  cudaDeviceProp prop;
  cudaCheck(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::vector<float> inp(B * T * C), weight(C), bias(C), out(B * T * C), expected(B * T * C);
  for (size_t i = 0; i < inp.size(); i++) inp[i] = std::sin(0.37f * i);
  for (int c = 0; c < C; c++) weight[c] = 1.0f + 0.01f * c, bias[c] = 0.001f * c;
  layernorm_forward_cpu(expected.data(), inp.data(), weight.data(), bias.data(), B * T, C);
  float *d_out, *d_inp, *d_weight, *d_bias;
  cudaCheck(cudaMalloc(&d_out, out.size() * sizeof(float)));
  cudaCheck(cudaMalloc(&d_inp, inp.size() * sizeof(float)));
  cudaCheck(cudaMalloc(&d_weight, C * sizeof(float)));
  cudaCheck(cudaMalloc(&d_bias, C * sizeof(float)));
  cudaCheck(cudaMemcpy(d_inp, inp.data(), inp.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_weight, weight.data(), C * sizeof(float), cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_bias, bias.data(), C * sizeof(float), cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  cudaCheck(cudaEventCreate(&start));
  cudaCheck(cudaEventCreate(&stop));
  for (int block_size : {32, 64, 128, 256, 512}) {
    cudaCheck(cudaEventRecord(start));
    layernorm_forward(kernel_num, d_out, d_inp, d_weight, d_bias, B, T, C, block_size);
    cudaCheck(cudaEventRecord(stop));
    cudaCheck(cudaEventSynchronize(stop));
    float ms = 0.0f;
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    cudaCheck(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    float worst = 0.0f;
    for (size_t i = 0; i < out.size(); i++) worst = std::fmax(worst, std::fabs(out[i] - expected[i]));
    std::printf("block_size %4d | time %.4f ms | max error %g\n", block_size, ms, worst);
  }
  cudaCheck(cudaFree(d_out));
  cudaCheck(cudaFree(d_inp));
  cudaCheck(cudaFree(d_weight));
  cudaCheck(cudaFree(d_bias));
  return 0;
}
