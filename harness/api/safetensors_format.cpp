#include "safetensors_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace ds::safetensors {

namespace {

constexpr std::uint64_t kMaxHeader = std::uint64_t(100) << 20;
constexpr std::size_t kMaxRank = 8;
constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 50;

struct Code {
  const char* code;
  DType dtype;
  std::size_t stored_size;
};
constexpr Code kCodes[] = {{"F64", DType::f64, 8},   {"F32", DType::f32, 4}, {"F16", DType::f16, 2},
                           {"BF16", DType::bf16, 2}, {"I32", DType::i32, 4}, {"I64", DType::i32, 8}};

[[noreturn]] void bad(const std::string& why) {
  throw FormatError(fmt::format("not a valid safetensors file: {}", why));
}

Entry entry(const std::string& name, const nlohmann::json& v, std::uint64_t data_size) {
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!v.is_object() || !v.contains(key)) bad(fmt::format("tensor '{}' has no '{}'", name, key));
    return v.at(key);
  };
  Entry e;
  e.name = name;
  const auto& dt = field("dtype");
  const Code* code = nullptr;
  for (const Code& c : kCodes)
    if (dt.is_string() && dt.get<std::string>() == c.code) code = &c;
  if (!code)
    bad(fmt::format("tensor '{}' has dtype {} (F64, F32, F16, BF16, I32 and I64 are read)", name, dt.dump()));
  e.code = code->code;
  e.dtype = code->dtype;
  // Every dimension and their product are bounded before any size is computed from them, so
  // the byte count below cannot overflow; whether the data is there is the offsets' question.
  const auto& shape = field("shape");
  if (!shape.is_array() || shape.size() > kMaxRank)
    bad(fmt::format("tensor '{}' has a shape that is not a list of at most {} sizes", name, kMaxRank));
  std::uint64_t n = 1;
  for (const auto& s : shape) {
    if (!s.is_number_unsigned() || (s.get<std::uint64_t>() && n > kMaxElements / s.get<std::uint64_t>()))
      bad(
          fmt::format("tensor '{}' has shape {}: a size that is negative, not an integer, or more than 2^50 "
                      "elements in all",
                      name, shape.dump()));
    n *= s.get<std::uint64_t>();
    e.shape.push_back(std::int64_t(s.get<std::uint64_t>()));
  }
  const auto& off = field("data_offsets");
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    bad(fmt::format("tensor '{}' has data_offsets {}, not [begin, end]", name, off.dump()));
  e.begin = off[0].get<std::uint64_t>();
  e.end = off[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    bad(fmt::format("tensor '{}' has data_offsets [{}, {}] outside the {} data bytes", name, e.begin, e.end,
                    data_size));
  if (e.end - e.begin != n * code->stored_size)
    bad(fmt::format("tensor '{}' of shape {} ({}) needs {} bytes; its data_offsets span {}", name,
                    shape.dump(), e.code, n * code->stored_size, e.end - e.begin));
  return e;
}

}  // namespace

Header parse_header(std::uint64_t file_size,
                    const std::function<std::vector<unsigned char>(std::uint64_t, std::uint64_t)>& read) {
  if (file_size < 8) bad("shorter than its 8-byte header length");
  const auto len = read(0, 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len[std::size_t(i)];
  if (n > kMaxHeader || n > file_size - 8)
    bad(fmt::format("the header length {} exceeds the file ({} bytes) or {} bytes", n, file_size,
                    kMaxHeader));
  Header h;
  h.data_start = 8 + n;
  h.data_size = file_size - h.data_start;
  const auto text = read(8, n);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    bad(fmt::format("the header is not JSON: {}", e.what()));
  }
  if (!j.is_object()) bad("the header is not a JSON object");
  for (const auto& [name, v] : j.items())
    if (name != "__metadata__") h.entries.push_back(entry(name, v, h.data_size));
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  return h;
}

Tensor decode(const Entry& e, const std::vector<unsigned char>& bytes) {
  Tensor t(e.dtype, e.shape);
  if (bytes.size() != e.end - e.begin)
    throw FormatError(
        fmt::format("tensor '{}': {} data bytes read of {}", e.name, bytes.size(), e.end - e.begin));
  if (e.code != "I64") {
    if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
    return t;
  }
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::int64_t v;
    std::memcpy(&v, bytes.data() + i * 8, 8);
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      throw FormatError(fmt::format("tensor '{}' element {} = {} does not fit in 32 bits", e.name, i, v));
    t.data<std::int32_t>()[i] = std::int32_t(v);
  }
  return t;
}

std::vector<unsigned char> encode(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::vector<std::pair<std::string, std::string>>& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  std::uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    const Code* code = nullptr;
    for (const Code& c : kCodes)
      if (c.dtype == t.dtype() && !code) code = &c;  // i32 is I32, never I64
    h[name] = {{"dtype", code->code}, {"shape", t.shape()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
  }
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data 8-byte aligned, as the format's writers do
  std::vector<unsigned char> out(8);
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = static_cast<unsigned char>(std::uint64_t(text.size()) >> (8 * i));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& [name, t] : tensors) {
    const auto* raw = reinterpret_cast<const unsigned char*>(t.raw());
    out.insert(out.end(), raw, raw + t.nbytes());
  }
  return out;
}

}  // namespace ds::safetensors
