// safetensors dumps, through the one container parser (safetensors_format.h).
#include <fmt/format.h>

#include <map>

#include "npy_parse.h"
#include "safetensors_format.h"
#include "tensor_files.h"

namespace ds::dump {

namespace {

class SafetensorsFile final : public TensorFile {
 public:
  explicit SafetensorsFile(const std::string& path) : TensorFile(path) {
    try {
      header_ = safetensors::parse_header(
          file_size(path), [&](std::uint64_t at, std::uint64_t n) { return read_file_range(path, at, n); });
    } catch (const safetensors::FormatError& e) {
      throw DumpError(fmt::format("{}: {}", path, e.what()));
    }
    for (const safetensors::Entry& e : header_.entries) entries_.emplace(e.name, &e);
  }

  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [n, e] : entries_) out.push_back(n);
    return out;
  }
  bool has(std::string_view name) const override { return entries_.count(name) != 0; }
  Shape shape(std::string_view name) const override { return find(name).shape; }
  Tensor read(std::string_view name) const override {
    const safetensors::Entry& e = find(name);
    try {
      return safetensors::decode(e, read_file_range(path_, header_.data_start + e.begin, e.end - e.begin));
    } catch (const safetensors::FormatError& err) {
      throw DumpError(fmt::format("{}: {}", path_, err.what()));
    }
  }

 private:
  const safetensors::Entry& find(std::string_view name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw DumpError(fmt::format("{}: no tensor '{}'", path_, name));
    return *it->second;
  }

  safetensors::Header header_;
  std::map<std::string, const safetensors::Entry*, std::less<>> entries_;
};

}  // namespace

std::unique_ptr<TensorFile> open_safetensors(const std::string& path) {
  return std::make_unique<SafetensorsFile>(path);
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  write_file(path, safetensors::encode(tensors));
}

}  // namespace ds::dump
