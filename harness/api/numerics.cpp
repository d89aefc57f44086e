#include "numerics.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace ds {

namespace {

using N = Numerics;

// One table per field: its key, and each value's spelling. parse and print both read these.
template <typename E>
struct Choice {
  std::string_view spelling;
  E value;
};
constexpr std::array<Choice<N::Accum>, 2> kAccum{{{"exact", N::Accum::exact}, {"f32", N::Accum::f32}}};
constexpr std::array<Choice<N::RopeAngles>, 3> kRope{{{"exact", N::RopeAngles::exact},
                                                      {"f32-recurrence", N::RopeAngles::f32_recurrence},
                                                      {"f32-product", N::RopeAngles::f32_product}}};
constexpr std::array<Choice<N::Attention>, 2> kAttention{
    {{"exact", N::Attention::exact}, {"f16-flash", N::Attention::f16_flash}}};
constexpr std::array<Choice<N::Gelu>, 2> kGelu{
    {{"exact", N::Gelu::exact}, {"f16-table", N::Gelu::f16_table}}};
constexpr std::array<Choice<N::ActQuant>, 4> kActQuant{{{"none", N::ActQuant::none},
                                                        {"q8_0", N::ActQuant::q8_0},
                                                        {"q8_k", N::ActQuant::q8_k},
                                                        {"ggml", N::ActQuant::ggml}}};

template <typename E, std::size_t K>
std::string_view spell(const std::array<Choice<E>, K>& table, E v) {
  for (const auto& c : table)
    if (c.value == v) return c.spelling;
  return "?";
}

template <typename E, std::size_t K>
E pick(const std::array<Choice<E>, K>& table, std::string_view key, std::string_view v) {
  std::string known;
  for (const auto& c : table) {
    if (c.spelling == v) return c.value;
    known += known.empty() ? "" : ", ";
    known += c.spelling;
  }
  throw std::invalid_argument(fmt::format("numerics: {}={}: expected one of {}", key, v, known));
}

std::string profile_names() {
  std::string s;
  for (const auto& p : numerics_profiles()) s += fmt::format("{}{}", s.empty() ? "" : ", ", p.name);
  return s;
}

void set_field(Numerics& n, std::string_view key, std::string_view v) {
  if (key == "accum") {
    n.accum = pick(kAccum, key, v);
  } else if (key == "rope") {
    n.rope = pick(kRope, key, v);
  } else if (key == "attention") {
    n.attention = pick(kAttention, key, v);
  } else if (key == "gelu") {
    n.gelu = pick(kGelu, key, v);
  } else if (key == "act-quant") {
    n.act_quant = pick(kActQuant, key, v);
  } else if (key == "kv-cache") {
    const auto t = parse_dtype(v);
    if (!t || (*t != DType::f32 && *t != DType::f16 && *t != DType::bf16))
      throw std::invalid_argument(fmt::format("numerics: kv-cache={}: expected f32, f16 or bf16", v));
    n.kv_cache = *t;
  } else {
    throw std::invalid_argument(fmt::format(
        "numerics: unknown key '{}' (accum, rope, attention, gelu, act-quant, kv-cache; or a profile: {})",
        key, profile_names()));
  }
}

}  // namespace

const std::vector<NumericsProfile>& numerics_profiles() {
  static const std::vector<NumericsProfile> profiles = {
      {"one-rounding", "every stage rounded once to the storage dtype from f64 (an ideal engine)", {}},
      {"f32",
       "a generic f32 engine: dot products summed in f32 (the default for f32 storage)",
       {.accum = N::Accum::f32}},
      {"llama.cpp-f32",
       "llama.cpp CPU with KV cache f32 and flash attention off: f32 sums, f32 RoPE angle recurrence, "
       "f16-table GELU, activations quantized by weight type",
       {.accum = N::Accum::f32,
        .rope = N::RopeAngles::f32_recurrence,
        .gelu = N::Gelu::f16_table,
        .act_quant = N::ActQuant::ggml}},
      {"llama.cpp-default",
       "llama.cpp CPU defaults: as llama.cpp-f32, with an f16 KV cache and flash attention accumulating "
       "in f16",
       {.accum = N::Accum::f32,
        .rope = N::RopeAngles::f32_recurrence,
        .attention = N::Attention::f16_flash,
        .gelu = N::Gelu::f16_table,
        .act_quant = N::ActQuant::ggml,
        .kv_cache = DType::f16}},
      {"hf-f32",
       "HF transformers on CPU in float32: f32 sums, RoPE angles as f32 position times f32 inverse "
       "frequency",
       {.accum = N::Accum::f32, .rope = N::RopeAngles::f32_product}},
      {"hf-bf16",
       "HF transformers in bfloat16 or float16 (the storage dtype from the dump): f32 sums, f32 RoPE angles",
       {.accum = N::Accum::f32, .rope = N::RopeAngles::f32_product}},
  };
  return profiles;
}

Numerics parse_numerics(std::string_view spec) {
  Numerics n;
  bool first = true;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      const NumericsProfile* found = nullptr;
      for (const auto& p : numerics_profiles())
        if (p.name == item) found = &p;
      if (!found || !first)
        throw std::invalid_argument(
            found ? fmt::format("numerics: profile '{}' must come first", item)
                  : fmt::format("numerics: unknown profile '{}' (profiles: {}; or key=value pairs)", item,
                                profile_names()));
      n = found->numerics;
    } else {
      set_field(n, item.substr(0, eq), item.substr(eq + 1));
    }
    first = false;
  }
  if (first) throw std::invalid_argument("numerics: empty (a profile name or key=value pairs)");
  return n;
}

Numerics default_numerics(DType storage) {
  return storage == DType::f32 ? Numerics{.accum = Numerics::Accum::f32} : Numerics{};
}

std::string numerics_str(const Numerics& n) {
  std::string s;
  const auto add = [&](std::string_view key, std::string_view v) {
    s += fmt::format("{}{}={}", s.empty() ? "" : ",", key, v);
  };
  if (n.accum != Numerics::Accum::exact) add("accum", spell(kAccum, n.accum));
  if (n.rope != Numerics::RopeAngles::exact) add("rope", spell(kRope, n.rope));
  if (n.attention != Numerics::Attention::exact) add("attention", spell(kAttention, n.attention));
  if (n.gelu != Numerics::Gelu::exact) add("gelu", spell(kGelu, n.gelu));
  if (n.act_quant != Numerics::ActQuant::none) add("act-quant", spell(kActQuant, n.act_quant));
  if (n.kv_cache) add("kv-cache", dtype_name(*n.kv_cache));
  return s.empty() ? "one-rounding" : s;
}

}  // namespace ds
