#include "safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_error.h"

namespace ds::ref {

namespace {
struct Entry {
  std::string name;
  DType stored;  // f32 / f16 / bf16 / f64
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

DType parse_st_dtype(const std::string& path, const std::string& name, const std::string& s) {
  if (s == "F32") return DType::f32;
  if (s == "F16") return DType::f16;
  if (s == "BF16") return DType::bf16;
  if (s == "F64") return DType::f64;
  throw ModelError(
      fmt::format("{}: tensor {}: dtype {} is not supported (F32, F16, BF16, F64)", path, name, s));
}
}  // namespace

void read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& want,
                      const std::function<void(const std::string&, Tensor)>& sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(fmt::format("{}: cannot open", path));
  in.seekg(0, std::ios::end);
  const auto file_size = std::uint64_t(in.tellg());
  in.seekg(0);
  std::uint64_t n = 0;
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(&n), 8))
    throw ModelError(fmt::format("{}: truncated header length", path));
  if (n > 100'000'000 || 8 + n > file_size)
    throw ModelError(
        fmt::format("{}: header length {} does not fit the file ({} bytes)", path, n, file_size));
  std::string header(std::size_t(n), '\0');
  in.read(header.data(), std::streamsize(n));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const std::exception& e) {
    throw ModelError(fmt::format("{}: header is not JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw ModelError(fmt::format("{}: header is not a JSON object", path));
  const std::uint64_t data_start = 8 + n, data_size = file_size - data_start;
  std::vector<Entry> entries;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") continue;
    try {
      if (!v.is_object())
        throw ModelError(fmt::format("{}: tensor {}: header entry is not an object", path, name));
      const auto& dtype = v.at("dtype");
      if (!dtype.is_string())
        throw ModelError(fmt::format("{}: tensor {}: dtype must be a string", path, name));
      Entry e{name, parse_st_dtype(path, name, dtype.get<std::string>()), {}};
      // Every dimension and their product are checked before any size is computed from them: the
      // bytes must fit the file, so the product is bounded by its size without overflow.
      const auto& shape = v.at("shape");
      if (!shape.is_array() || shape.size() > 8)
        throw ModelError(
            fmt::format("{}: tensor {}: shape must be a list of at most 8 dimensions", path, name));
      std::uint64_t elements = 1;
      for (const auto& d : shape) {
        if (!d.is_number_unsigned() ||
            (d.get<std::uint64_t>() && elements > data_size / d.get<std::uint64_t>()))
          throw ModelError(
              fmt::format("{}: tensor {}: shape {} has a dimension that is negative, not an integer, "
                          "or too large for the {}-byte buffer",
                          path, name, shape.dump(), data_size));
        elements *= d.get<std::uint64_t>();
        e.shape.push_back(std::int64_t(d.get<std::uint64_t>()));
      }
      const auto& offsets = v.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
          !offsets[1].is_number_unsigned())
        throw ModelError(
            fmt::format("{}: tensor {}: data_offsets must be two non-negative integers", path, name));
      e.begin = offsets[0].get<std::uint64_t>();
      e.end = offsets[1].get<std::uint64_t>();
      const std::uint64_t want_bytes = elements * dtype_size(e.stored);  // elements <= data_size: no overflow
      if (e.end < e.begin || e.end - e.begin != want_bytes || e.end > data_size)
        throw ModelError(fmt::format(
            "{}: tensor {}: data_offsets [{}, {}) do not match shape {} of {} in a {}-byte buffer", path,
            name, e.begin, e.end, shape_str(e.shape), dtype_name(e.stored), data_size));
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      throw ModelError(fmt::format("{}: tensor {}: malformed header entry: {}", path, name, ex.what()));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (const auto& e : entries) {
    if (!want(e.name)) continue;
    Tensor raw(e.stored, e.shape);
    in.seekg(std::streamoff(data_start + e.begin));
    if (!in.read(reinterpret_cast<char*>(raw.raw()), std::streamsize(raw.nbytes())))
      throw ModelError(fmt::format("{}: tensor {}: read failed", path, e.name));
    sink(e.name, e.stored == DType::f64 || e.stored == DType::f32 ? std::move(raw) : raw.to(DType::f32));
  }
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::vector<Tensor> stored;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (!is_float(t.dtype()))
      throw ModelError(
          fmt::format("{}: tensor {}: dtype {} cannot be written", path, name, dtype_name(t.dtype())));
    const Tensor& s = t;
    const char* st = s.dtype() == DType::f64   ? "F64"
                     : s.dtype() == DType::f32 ? "F32"
                     : s.dtype() == DType::f16 ? "F16"
                                               : "BF16";
    header[name] = {{"dtype", st}, {"shape", s.shape()}, {"data_offsets", {offset, offset + s.nbytes()}}};
    offset += s.nbytes();
    stored.push_back(s);
  }
  header["__metadata__"] = {{"format", "pt"}, {"writer", "driftscope-mkfixture"}};
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');  // keeps the buffer 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ModelError(fmt::format("{}: cannot open for writing", path));
  const std::uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), std::streamsize(h.size()));
  for (const auto& s : stored) out.write(reinterpret_cast<const char*>(s.raw()), std::streamsize(s.nbytes()));
  if (!out) throw ModelError(fmt::format("{}: write failed", path));
}

}  // namespace ds::ref
