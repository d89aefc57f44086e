#include "mutants.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "kernel_module.h"
#include "launch_sinks.h"
#include "stage_catalog.h"

namespace ds::gpu {

// Each row: the bug, the model it shows on, and where the harness must first report it.
// All are judged in isolated mode, at model step 0 (the prefill) unless the row says a later
// step. Why each stage is the first one is in docs/mutants.md.
std::span<const MutantInfo> mutants() {
  static const MutantInfo kMutants[] = {
      {"chain-add-idx", "synthetic:qwen2-tiny", "residual_1", 0, "isolated", "default",
       "o_proj/down chain-add epilogue indexes the residual with blockIdx.x instead of the row"},
      {"gemv-warps", "synthetic:qwen2-tiny", "attn_out", 0, "isolated", "default",
       "GEMV written for 8 warps per block, launched with 4: half the rows never computed"},
      {"dim-flip", "synthetic:qwen2-tiny", "attn_out", 0, "isolated", "default",
       "GEMV reads the [out, in] weight as [in, out]"},
      {"double-bias", "synthetic:qwen2-bias-tiny", "ffn_act", 0, "isolated", "default",
       "SwiGLU adds the gate/up bias the GEMV already added; needs a model with MLP bias"},
      {"half-before-bias", "synthetic:qwen2-tiny", "q", 0, "isolated", "strict",
       "fused QKV rounds the f32 accumulator to half before adding the bias: <= 1 ULP"},
      {"skip-qk-norm", "synthetic:qwen3-tiny", "q_norm", 0, "isolated", "default",
       "declares QkNorm, copies q/k through unnormalised"},
      {"rope-theta-default", "synthetic:llama-tiny", "q_rope", 0, "isolated", "default",
       "RoPE uses theta 10000 instead of the config's rope_theta"},
      {"gqa-modulo", "synthetic:llama-tiny", "attn", 0, "isolated", "default",
       "attention reads KV head h % n_kv instead of h / (n_heads / n_kv)"},
      {"layernorm-no-mean-sub", "synthetic:gpt2-tiny", "ln_1", 0, "isolated", "default",
       "LayerNorm variance taken as mean(x^2), without subtracting the mean first: off by mean^2"},
      {"layernorm-as-rmsnorm", "synthetic:gpt2-tiny", "ln_1", 0, "isolated", "default",
       "LayerNorm never subtracts the mean: an RMSNorm with LayerNorm's bias (an RMSNorm kernel reused)"},
      {"gelu-sigmoid", "synthetic:gpt2-tiny", "gelu", 0, "isolated", "default",
       "gelu_new computed as quick_gelu, x * sigmoid(1.702 x), instead of the tanh form"},
      {"pos-no-offset", "synthetic:gpt2-tiny", "embed", kModelLayer, "isolated", "default",
       "learned position of token t read at t instead of pos0 + t: right for the prefill, wpe[0] for every "
       "decode token",
       1},
      {"reduce-no-barrier", "synthetic:llama-tiny", "attn", 0, "isolated", "default",
       "attention's block reduction reads the warps' partials with no __syncthreads after they are written",
       0, "schedule", "dsk_simt::mutant_reduce_no_barrier::attention_kernel", "RAW"},
      {"reduce-war", "synthetic:llama-tiny", "attn", 0, "isolated", "default",
       "attention's block reduction writes its partials before every warp has read the previous "
       "reduction's: shared memory reused too early (write-after-read)",
       0, "hazard", "dsk_simt::mutant_reduce_war::attention_kernel", "WAR"},
      {"norm-no-offset", "synthetic:qwen35-tiny", "attn_norm", 0, "isolated", "default",
       "RMSNorm scales by w where Qwen3-Next needs (1 + w): a plain norm kernel reused on weights stored "
       "around 0"},
      {"attn-gate-raw", "synthetic:qwen35-tiny", "attn_gated", 1, "isolated", "default",
       "Qwen3-Next's attention output gate multiplied in raw, without its sigmoid"},
      {"gdn-gates-no-dt-bias", "synthetic:qwen35-tiny", "g", 0, "isolated", "default",
       "GDN decay gate computed as softplus(a) without dt_bias: a bias dropped"},
      // The rows below set fields past `what`: every field is named, so each reads as what it sets.
      {.name = "rope-no-scaling",
       .model = "synthetic:llama3-tiny",
       .first_stage = "q_rope",
       .first_layer = 0,
       .mode = "isolated",
       .policy = "default",
       .what = "RoPE declares the Llama-3 frequency factors and ignores them: right at short positions, off "
               "by O(1) past the original context's high-frequency wavelength",
       .first_step = 1,
       .late_prompt = 2050},
      {.name = "softmax-no-max",
       .model = "synthetic:llama-tiny",
       .first_stage = "attn",
       .first_layer = 0,
       .mode = "isolated",
       .policy = "default",
       .what = "attention's softmax takes exp(s) without subtracting the row's max: exact until a score "
               "passes 88.7, then inf / inf",
       .probe = "large-logits"},
      {"norm-eps-outside", "synthetic:llama-tiny", "attn_norm", 0, "isolated", "default",
       "RMSNorm adds eps outside the square root, 1 / (sqrt(mean(x^2)) + eps): invisible until mean(x^2) "
       "nears eps, which real-scale embeddings (RMS 0.02) bring it to"},
      {.name = "gemv-no-tail",
       .model = "synthetic:qwen2-tails-tiny",
       .first_stage = "attn_out",
       .first_layer = 0,
       .mode = "isolated",
       .policy = "default",
       .what = "GEMV drops the scalar tail after its 16-byte vectors: right on widths that are multiples of "
               "8, wrong on the rest",
       .hidden_on = "synthetic:qwen2-tiny"},
      {"gemv-half-accum", "synthetic:qwen2-tiny", "attn_out", 0, "isolated", "default",
       "GEMV keeps its running sums in half: every add rounds, a few times the f16 noise floor"},
      // The same bias at every layer: the first whose 16 x 64 outputs put it past 6 standard
      // errors is layer 5 (the chained error also compounds from layer 0: the drift line says so).
      {.name = "chain-add-rz",
       .model = "synthetic:llama-deep-tiny",
       .first_stage = "residual_2",
       .first_layer = 5,
       .mode = "isolated",
       .policy = "default",
       .what = "chain-add epilogue stores the residual rounded toward zero: half an ULP lost a store, always "
               "toward zero, carried from layer to layer"},
      // Mixture-of-experts kernels (kernels/moe_experts.cu; docs/moe.md).
      {"moe-capacity-drop", "synthetic:qwen3moe-tiny", "moe_out", 0, "isolated", "default",
       "grouped experts with a capacity of ceil(T k / E) slots per expert: the tokens past it on an "
       "over-subscribed expert dropped, their share of moe_out lost"},
      {"moe-half-combine", "synthetic:qwen3moe-tiny", "moe_out", 0, "isolated", "strict",
       "the weighted combine of the k experts accumulated in half: each expert output, product and sum "
       "rounded to f16"},
      {"moe-slots-transposed", "synthetic:qwen3moe-tiny", "moe_out", 0, "isolated", "default",
       "grouped gate/up GEMV reads slot s's token as s % T ([k, T] slots) where the ids are [T, k] (s / k): "
       "right in a decode step, wrong in a prefill"},
      {"moe-shexp-gate-no-sigmoid", "synthetic:qwen3next-tiny", "shexp_gate", 0, "isolated", "default",
       "Qwen3-Next's shared-expert gate (kernels/moe_shexp.cu) taken as its raw logit, no sigmoid: the logit "
       "stored as shexp_gate and scaling the shared expert in ffn_out"},
  };
  return kMutants;
}

std::span<const GdnMutantInfo> gdn_mutants() {
  static const GdnMutantInfo kMutants[] = {
      {"gdn-conv-taps-reversed", "", "conv", 0, 0,
       "SSM conv applies tap i with weight w[K-1-i] (the current token meets w[0])"},
      {"gdn-head-modulo", "", "gdn_out", 0, 0,
       "GDN value head h reads key head h % n_k (tiled ggml broadcast) where the model needs h / rho"},
      {"gdn-state-transposed", "", "gdn_out", 0, 1,
       "GDN prior state [d_k, d_v] read as [d_v, d_k]; invisible from the zero state of the prefill"},
      {"gdn-ids-ignored", "ids,conv-update-ids", "conv", 0, 1,
       "ops B / D read every sequence's prior state from its destination slot, ignoring ids"},
  };
  return kMutants;
}

namespace {

// kernels/mutants/CMakeLists.txt: ds_mutant_<name, '_' for '-'>_module, libdriftscope-mutant-<name>.so.
const KernelModule& open_mutant_module(std::string_view name) {
  std::string target = fmt::format("ds_mutant_{}_module", name);
  std::ranges::replace(target, '-', '_');
  const std::filesystem::path built =
      std::filesystem::path(DRIFTSCOPE_MUTANT_MODULE_DIR) / fmt::format("libdriftscope-mutant-{}.so", name);
  return open_kernel_module(built, target, "driftscope_mutant_kernel_table",
                            fmt::format("the mutant:{} module", name));
}

}  // namespace

const dsk::KernelTable* mutant_kernels(std::string_view name, std::string& why) {
  const auto named = [&](const auto& rows) {
    return std::ranges::any_of(rows, [&](const auto& m) { return m.name == name; });
  };
  if (!named(mutants()) && !named(gdn_mutants()))
    throw std::logic_error(fmt::format("mutant:{} is no registered mutant", name));
  const KernelModule& m = open_mutant_module(name);  // once per process per mutant
  why = m.why;
  if (m.table == nullptr) return nullptr;
  launch_sinks::install_in_library(m.handle);  // this run's settings, sinks and launch records
  return m.table;
}

}  // namespace ds::gpu
