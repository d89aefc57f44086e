// The layernorm kind's entry around a repository's kernel file, which it includes as it is: the
// inputs copied to the device, the file's own dispatch launched, the output copied back
// (docs/your-kernel.md, "A launcher of your own, adapted to a kind").
#include "repo/layernorm_repo.cu"

void repo_layernorm(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                    int rows, int cols, float eps) {
  (void)mean, (void)rstd, (void)eps;  // nothing reads them; the file's epsilon is GPT-2's 1e-5
  const size_t act = size_t(rows) * cols * sizeof(float), vec = cols * sizeof(float);
  float *d_out, *d_x, *d_w, *d_b;
  cudaCheck(cudaMalloc(&d_out, act));
  cudaCheck(cudaMalloc(&d_x, act));
  cudaCheck(cudaMalloc(&d_w, vec));
  cudaCheck(cudaMalloc(&d_b, vec));
  cudaCheck(cudaMemcpy(d_x, x, act, cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_w, w, vec, cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_b, b, vec, cudaMemcpyHostToDevice));
  layernorm_forward(2, d_out, d_x, d_w, d_b, 1, rows, cols, 128);
  cudaCheck(cudaMemcpy(out, d_out, act, cudaMemcpyDeviceToHost));
  for (float* p : {d_out, d_x, d_w, d_b}) cudaCheck(cudaFree(p));
}
