#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

#include "scaffold_files.h"

namespace ds::cli {

const std::vector<ScaffoldKind>& scaffold_kinds() {
  // The signatures are those harness/cli/scaffold/<kind>.cpp declares as @ENTRY@ (with @ELEM@
  // float, or __half for the f16 variant); the kinds of GPT-2's stages (LayerNorm, GELU, learned
  // positions) are tried on GPT-2.
  static constexpr std::string_view kQwen2 = "synthetic:qwen2-tiny", kGpt2 = "synthetic:gpt2-tiny",
                                    kLlama = "synthetic:llama-tiny", kQwen3 = "synthetic:qwen3-tiny",
                                    kQwen35 = "synthetic:qwen35-tiny";
  static const std::vector<ScaffoldKind> kinds = {
      {"rmsnorm",
       "attn_norm, ffn_norm",
       "void NAME(float* out, const float* x, const float* w, int rows, int cols, float eps)",
       kQwen2,
       {}},
      {"gemv",
       "down",
       "void NAME(float* y, const float* W, const float* x, const float* bias, int tokens, int rows, int "
       "cols)",
       kQwen2,
       {}},
      {"rope",
       "q_rope, k_rope",
       "void NAME(float* q, const float* inv_freq, int tokens, int heads, int head_dim, int rotary, int "
       "pos0, bool neox)",
       kQwen2,
       {}},
      {"swiglu", "ffn_act", "void NAME(float* out, const float* gate, const float* up, long n)", kQwen2, {}},
      {"layernorm", "ln_1, ln_2, final_norm",
       "void NAME(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, int "
       "rows, int cols, float eps)",
       kGpt2,
       "void NAME(__half* out, float* mean, float* rstd, const __half* x, const __half* w, const __half* b, "
       "int rows, int cols, float eps)"},
      {"gelu", "gelu", "void NAME(float* out, const float* x, long n)", kGpt2,
       "void NAME(__half* out, const __half* x, long n)"},
      {"residual", "residual_1, residual_2", "void NAME(float* out, const float* a, const float* b, long n)",
       kGpt2, "void NAME(__half* out, const __half* a, const __half* b, long n)"},
      {"embedding",
       "embed",
       "void NAME(float* out, const int* ids, const float* wte, const float* wpe, int tokens, int vocab, int "
       "positions, int cols, int pos0)",
       kGpt2,
       {}},
      {"attention",
       "attn",
       "void NAME(float* out, const float* q, const float* k, const float* v, int tokens, int kv_len, int "
       "n_heads, int n_kv_heads, int head_dim, float scale)",
       kLlama,
       {}},
      {"qk_norm",
       "q_norm, k_norm",
       "void NAME(float* out, const float* x, const float* w, int tokens, int heads, int head_dim, float "
       "eps)",
       kQwen3,
       {}},
      {"qkv",
       "q, k, v, qkv",
       "void NAME(float* qkv, const float* x, const float* W, const float* bias, int tokens, int hidden, int "
       "q_dim, int kv_dim)",
       kQwen2,
       {}},
      {"gated_norm",
       "gated_norm",
       "void NAME(float* out, const float* o, const float* z, const float* w, int tokens, int heads, int "
       "head_dim, float eps)",
       kQwen35,
       {}},
      {"conv",
       "conv, conv_state",
       "void NAME(float* out, float* state, const float* x, const float* w, int tokens, int channels, int "
       "taps, "
       "int state_rows)",
       kQwen35,
       {}},
      {"l2norm",
       "q_l2, k_l2",
       "void NAME(float* q_out, float* k_out, const float* conv, int tokens, int k_heads, int k_dim, int "
       "conv_dim, float q_scale, float eps)",
       kQwen35,
       {}},
      {"gdn_gates",
       "beta, g",
       "void NAME(float* beta, float* g, const float* x, const float* Wb, const float* Wa, const float* "
       "a_neg, "
       "const float* dt_bias, int tokens, int hidden, int v_heads)",
       kQwen35,
       {}},
      {"gdn",
       "gdn_out, gdn_state",
       "void NAME(float* out, float* state, const float* q, const float* k, const float* v, const float* g, "
       "const float* beta, int tokens, int k_heads, int v_heads, int k_dim, int v_dim, bool tiled)",
       kQwen35,
       {}},
  };
  return kinds;
}

const ScaffoldKind* find_scaffold_kind(std::string_view name) {
  for (const ScaffoldKind& k : scaffold_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::string scaffold_project_name(std::string_view base) {
  std::string n;
  for (char c : base)
    n +=
        std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(static_cast<unsigned char>(c))) : '_';
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) n = "candidate_" + n;
  // Target names CMake or its generators keep for themselves ("target name is reserved" at
  // configure), compared as lower-cased above.
  static constexpr std::string_view kReserved[] = {"all",
                                                   "clean",
                                                   "install",
                                                   "help",
                                                   "test",
                                                   "package",
                                                   "package_source",
                                                   "preinstall",
                                                   "edit_cache",
                                                   "rebuild_cache",
                                                   "zero_check",
                                                   "run_tests",
                                                   "all_build",
                                                   "list_install_components"};
  for (std::string_view r : kReserved)
    if (n == r) return n + "_kernel";
  return n;
}

std::string scaffold_candidate_name(std::string_view project) {
  std::string out(project);
  for (char& c : out)
    if (c == '_') c = '-';
  return out;
}

std::string scaffold_kinds_text() {
  std::string out;
  for (const ScaffoldKind& k : scaffold_kinds())
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", k.name, k.stages);
  return out;
}

std::string scaffold_kind_names(bool f16_only) {
  std::string out;
  for (const ScaffoldKind& k : scaffold_kinds())
    if (!f16_only || !k.signature_f16.empty()) out += fmt::format("{}{}", out.empty() ? "" : ", ", k.name);
  return out;
}

std::string scaffold_text(std::string_view name, const ScaffoldVars& vars) {
  std::string_view text;
  for (const auto& f : scaffold_files())
    if (f.name == name) text = f.text;
  if (text.empty()) throw std::logic_error(fmt::format("scaffold template {} is not compiled in", name));
  std::string out(text);
  for (const auto& [key, value] : vars)
    for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size()))
      out.replace(at, key.size(), value);
  return out;
}

}  // namespace ds::cli
