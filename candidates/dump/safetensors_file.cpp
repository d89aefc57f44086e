// safetensors: a little-endian u64 header length, a JSON header {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {...}} and the data bytes the offsets index.
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "npy_parse.h"
#include "tensor_files.h"

namespace ds::dump {

namespace {

constexpr std::uint64_t kMaxHeader = std::uint64_t(100) << 20;
constexpr std::size_t kMaxRank = 8;

struct Entry {
  DType dtype = DType::f32;
  std::size_t elem = 4;
  bool i64 = false;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

class SafetensorsFile final : public TensorFile {
 public:
  explicit SafetensorsFile(const std::string& path) : TensorFile(path) {
    const std::uint64_t size = file_size(path);
    if (size < 8) bad("shorter than its 8-byte header length");
    const auto len_bytes = read_file_range(path, 0, 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | len_bytes[std::size_t(i)];
    if (n > kMaxHeader || n > size - 8)
      bad(fmt::format("the header length {} exceeds the file ({} bytes) or {} bytes", n, size, kMaxHeader));
    data_start_ = 8 + n;
    data_size_ = size - data_start_;
    const auto text = read_file_range(path, 8, n);
    nlohmann::json h;
    try {
      h = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
      bad(fmt::format("the header is not JSON: {}", e.what()));
    }
    if (!h.is_object()) bad("the header is not a JSON object");
    for (const auto& [name, v] : h.items()) {
      if (name == "__metadata__") continue;
      entries_[name] = entry(name, v);
    }
  }

  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [n, e] : entries_) out.push_back(n);
    return out;
  }
  bool has(std::string_view name) const override { return entries_.count(std::string(name)) != 0; }
  Shape shape(std::string_view name) const override { return find(name).shape; }
  Tensor read(std::string_view name) const override {
    const Entry& e = find(name);
    const auto bytes = read_file_range(path_, data_start_ + e.begin, e.end - e.begin);
    Tensor t(e.dtype, e.shape);
    if (!e.i64) {
      if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
      return t;
    }
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      std::int64_t v;
      std::memcpy(&v, bytes.data() + i * 8, 8);
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        throw DumpError(
            fmt::format("{}: tensor '{}' element {} = {} does not fit in 32 bits", path_, name, i, v));
      t.data<std::int32_t>()[i] = std::int32_t(v);
    }
    return t;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    throw DumpError(fmt::format("{}: not a valid safetensors file: {}", path_, why));
  }
  const Entry& find(std::string_view name) const {
    auto it = entries_.find(std::string(name));
    if (it == entries_.end()) throw DumpError(fmt::format("{}: no tensor '{}'", path_, name));
    return it->second;
  }

  Entry entry(const std::string& name, const nlohmann::json& v) const {
    auto field = [&](const char* key) -> const nlohmann::json& {
      if (!v.is_object() || !v.contains(key)) bad(fmt::format("tensor '{}' has no '{}'", name, key));
      return v.at(key);
    };
    Entry e;
    const auto& dt = field("dtype");
    const std::string d = dt.is_string() ? dt.get<std::string>() : std::string("?");
    if (d == "F64")
      e = {DType::f64, 8, false, {}, 0, 0};
    else if (d == "F32")
      e = {DType::f32, 4, false, {}, 0, 0};
    else if (d == "F16")
      e = {DType::f16, 2, false, {}, 0, 0};
    else if (d == "BF16")
      e = {DType::bf16, 2, false, {}, 0, 0};
    else if (d == "I32")
      e = {DType::i32, 4, false, {}, 0, 0};
    else if (d == "I64")
      e = {DType::i32, 8, true, {}, 0, 0};
    else
      bad(fmt::format("tensor '{}' has dtype {} (F64, F32, F16, BF16, I32, I64 are read)", name, dt.dump()));
    const auto& shape = field("shape");
    if (!shape.is_array() || shape.size() > kMaxRank)
      bad(fmt::format("tensor '{}' has a shape that is not a list of at most {} sizes", name, kMaxRank));
    std::uint64_t n = 1;
    for (const auto& s : shape) {
      if (!s.is_number_unsigned() || s.get<std::uint64_t>() > (std::uint64_t(1) << 40))
        bad(fmt::format("tensor '{}' has shape {}", name, shape.dump()));
      const std::uint64_t dim = s.get<std::uint64_t>();
      if (dim && n > (std::uint64_t(1) << 50) / dim)
        bad(fmt::format("tensor '{}' shape {} overflows", name, shape.dump()));
      n *= dim;
      e.shape.push_back(std::int64_t(dim));
    }
    const auto& off = field("data_offsets");
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad(fmt::format("tensor '{}' has data_offsets {}, not [begin, end]", name, off.dump()));
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.begin > e.end || e.end > data_size_)
      bad(fmt::format("tensor '{}' has data_offsets [{}, {}] outside the {} data bytes", name, e.begin, e.end,
                      data_size_));
    if (e.end - e.begin != n * e.elem)
      bad(fmt::format("tensor '{}' of shape {} needs {} bytes; its data_offsets span {}", name, shape.dump(),
                      n * e.elem, e.end - e.begin));
    return e;
  }

  std::map<std::string, Entry, std::less<>> entries_;
  std::uint64_t data_start_ = 0, data_size_ = 0;
};

const char* st_dtype(DType t) {
  switch (t) {
    case DType::f64: return "F64";
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
  }
  return "F32";
}

}  // namespace

std::unique_ptr<TensorFile> open_safetensors(const std::string& path) {
  return std::make_unique<SafetensorsFile>(path);
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  std::uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    h[name] = {{"dtype", st_dtype(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data aligned to 8 bytes, as the reference writer does
  std::vector<unsigned char> out(8);
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = static_cast<unsigned char>(std::uint64_t(text.size()) >> (8 * i));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& [name, t] : tensors) {
    const auto* raw = reinterpret_cast<const unsigned char*>(t.raw());
    out.insert(out.end(), raw, raw + t.nbytes());
  }
  write_file(path, out);
}

}  // namespace ds::dump
