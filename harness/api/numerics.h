// Engine numerics: how a correct implementation of a given kind computes, below the storage
// dtype. The noise floor is a reference run that computes the same way, so a stage's floor is
// the error of a correct engine *of that kind* against the f64 oracle, not of an ideal one that
// rounds once per stage. A profile is named (`llama.cpp-f32`, `hf-f32`, ...) or spelled out as
// `key=value,...`; docs/policies.md lists both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.h"

namespace ds {

struct Numerics {
  // Dot products (every matmul, attention's scores and weighted sums, norms' sums of squares):
  // exact (f64, one rounding at the stage's end) or summed in f32 one term after another with a
  // fused multiply-add, the longest error path any correct f32 engine takes.
  enum class Accum { exact, f32 };
  // RoPE angles: exact; f32 `theta *= powf(base, -2/d)` from the position up, pair by pair
  // (llama.cpp's CPU rope cache); or f32 position times f32 inverse frequency (HF transformers).
  enum class RopeAngles { exact, f32_recurrence, f32_product };
  // Attention: exact softmax and sums; or flash attention with its value accumulator held in
  // f16 (llama.cpp's CPU flash attention with an f16 KV cache).
  enum class Attention { exact, f16_flash };
  // GELU: the formula; or llama.cpp's CPU lookup table, f16(gelu(f16(x))).
  enum class Gelu { exact, f16_table };
  // Activations quantized before a matmul: none; always to Q8_0 or Q8_K blocks; or as ggml's CPU
  // backend does, by the weight's type in the file (F16 weights: f16 activations, Q4_0/Q5_0/Q8_0/
  // IQ4_NL: Q8_0, Q4_1/Q5_1: Q8_1 (whose values are Q8_0's), K-quants and IQ4_XS: Q8_K, BF16
  // weights: bf16 activations, F32: none).
  enum class ActQuant { none, q8_0, q8_k, ggml };

  Accum accum = Accum::exact;
  RopeAngles rope = RopeAngles::exact;
  Attention attention = Attention::exact;
  Gelu gelu = Gelu::exact;
  ActQuant act_quant = ActQuant::none;
  // The KV cache's dtype (K after RoPE, V) when it is narrower than the stages; nullopt: as the
  // stages are stored.
  std::optional<DType> kv_cache;

  bool operator==(const Numerics&) const = default;
  // True when nothing is modelled beyond one rounding per stage.
  bool one_rounding() const { return *this == Numerics{}; }
};

struct NumericsProfile {
  std::string_view name;
  std::string_view description;
  Numerics numerics;
};

// Every shipped profile, in the order `--numerics help` lists them.
const std::vector<NumericsProfile>& numerics_profiles();

// A profile name, or `key=value` pairs separated by commas (accum=f32, rope=f32-recurrence,
// attention=f16-flash, gelu=f16-table, act-quant=ggml, kv-cache=f16), optionally after a profile
// name to start from (`hf-f32,kv-cache=f16`). Throws std::invalid_argument naming what is wrong.
Numerics parse_numerics(std::string_view spec);

// What a candidate that declares nothing is judged against: a correct engine storing f32
// activations sums its dot products in f32 (the one-rounding floor of an f32 stage is below any
// real f32 engine's error); narrower storage dominates accumulation error, one rounding per stage.
Numerics default_numerics(DType storage);

// `key=value,...` of every field that differs from one rounding ("one-rounding" when none): the
// spelling parse_numerics reads back, recorded in traces and printed in reports.
std::string numerics_str(const Numerics& n);

}  // namespace ds
