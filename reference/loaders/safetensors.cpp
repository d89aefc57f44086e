#include "safetensors.h"

#include <fmt/format.h>

#include <fstream>

#include "model_error.h"
#include "safetensors_format.h"
#include "user_file.h"

namespace ds::ref {

void read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& want,
                      const std::function<void(const std::string&, Tensor)>& sink) {
  refuse_special_file<ModelError>(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(fmt::format("{}: cannot open", path));
  in.seekg(0, std::ios::end);
  const auto file_size = std::uint64_t(in.tellg());
  auto read = [&](std::uint64_t at, std::uint64_t n) {
    std::vector<unsigned char> bytes(n);
    in.seekg(std::streamoff(at));
    if (!in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(n)))
      throw ModelError(fmt::format("{}: read of {} bytes at {} failed", path, n, at));
    return bytes;
  };
  safetensors::Header h;
  try {
    h = safetensors::parse_header(file_size, read);
  } catch (const safetensors::FormatError& e) {
    throw ModelError(fmt::format("{}: {}", path, e.what()));
  }
  for (const safetensors::Entry& e : h.entries) {
    if (!is_float(e.dtype))
      throw ModelError(fmt::format("{}: tensor {}: dtype {} is not supported (F32, F16, BF16, F64)", path,
                                   e.name, e.code));
  }
  for (const safetensors::Entry& e : h.entries) {
    if (!want(e.name)) continue;
    Tensor raw = safetensors::decode(e, read(h.data_start + e.begin, e.end - e.begin));
    sink(e.name, e.dtype == DType::f64 || e.dtype == DType::f32 ? std::move(raw) : raw.to(DType::f32));
  }
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  for (const auto& [name, t] : tensors)
    if (!is_float(t.dtype()))
      throw ModelError(
          fmt::format("{}: tensor {}: dtype {} cannot be written", path, name, dtype_name(t.dtype())));
  const auto bytes = safetensors::encode(tensors, {{"format", "pt"}, {"writer", "driftscope-mkfixture"}});
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ModelError(fmt::format("{}: cannot open for writing", path));
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw ModelError(fmt::format("{}: write failed", path));
}

}  // namespace ds::ref
