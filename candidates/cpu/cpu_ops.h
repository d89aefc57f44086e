// f32 ops of the cpu candidates: the math of a straightforward float implementation, as a
// kernel author would write it on the CPU (f32 accumulation, float libm). Independent of the
// double-precision reference on purpose: a candidate never includes reference/.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model_config.h"
#include "tensor.h"

namespace ds::cpu {

// Row-major f32 matrix (rows x cols).
struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> v;
  Mat() = default;
  Mat(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(std::size_t(r * c), 0.0f) {}
  float* row(std::int64_t r) { return v.data() + r * cols; }
  const float* row(std::int64_t r) const { return v.data() + r * cols; }
};

// A weight matrix read where the harness holds it (Candidate::load's weights stay alive), in its
// stored dtype: an f32 row is the store's own memory, an f16, bf16 or f64 row is converted into
// the caller's scratch as it is read, so the candidate holds no copy of the model. Its values are
// those of to_mat (each element as float). Rank 1 is one row; a higher rank [d0, ...] is d0 rows.
// A block-quantized matrix is decoded into the scratch a row at a time, the same way.
class WeightMat {
 public:
  WeightMat() = default;
  explicit WeightMat(const Tensor& t);
  explicit WeightMat(const QuantMatrix& q);
  std::int64_t rows = 0, cols = 0;
  // Row r as f32: in place, or converted into `scratch` (resized to cols).
  const float* row(std::int64_t r, std::vector<float>& scratch) const;
  Mat to_mat() const;

 private:
  const std::byte* data_ = nullptr;
  DType dtype_ = DType::f32;
  const QuantMatrix* quant_ = nullptr;
};

Mat rmsnorm(const Mat& x, std::span<const float> w, float eps, int width);
// The variance divides by N - ddof: 0 is the biased variance LayerNorm takes (1 only for a mutant).
Mat layernorm(const Mat& x, std::span<const float> w, std::span<const float> b, float eps, int ddof = 0);
Mat linear(const Mat& x, const WeightMat& w, std::span<const float> bias);  // w is [out, in]
// linear's sums split over the input: each output is `splits` in-order partial sums of consecutive
// chunks of the input width, added in order (a split-K GEMV). Another order of the same products,
// so other roundings: what an engine that picks its split by the batch size computes.
Mat linear_split_k(const Mat& x, const WeightMat& w, std::span<const float> bias, int splits);
// `freq_factors` (empty: none) divides pair i's frequency, as Llama-3 and linear RoPE scaling do.
Mat rope(const Mat& x, int head_dim, int rotary_dim, int pos0, float theta, RopeMode mode,
         const std::vector<double>& freq_factors);
Mat attention(const Mat& q, const Mat& k_cache, const Mat& v_cache, int n_heads, int n_kv_heads, int head_dim,
              int pos0);
Mat silu_mul(const Mat& gate, const Mat& up);
Mat gelu_tanh(const Mat& x);  // GPT-2's gelu_new
// Columns [first, first + n) of every row (a view of GPT-2's fused [q | k | v] rows, copied).
Mat columns(const Mat& x, std::int64_t first, std::int64_t n);
Mat add(const Mat& a, const Mat& b);

}  // namespace ds::cpu
