#include "tensor_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "npy_parse.h"
#include "output_file.h"
#include "user_file.h"

namespace ds::dump {

std::uint64_t file_size(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw DumpError(fmt::format("{}: no such file", path));
  refuse_special_file<DumpError>(path);
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) throw DumpError(fmt::format("{}: cannot read: {}", path, ec.message()));
  return n;
}

std::vector<unsigned char> read_file_range(const std::string& path, std::uint64_t offset, std::uint64_t n) {
  const std::uint64_t size = file_size(path);
  if (offset > size || n > size - offset)
    throw DumpError(fmt::format("{}: {} bytes at offset {} lie past the end of the file ({} bytes)", path, n,
                                offset, size));
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> out(static_cast<std::size_t>(n));
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in || !in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n)))
    throw DumpError(fmt::format("{}: cannot read {} bytes at offset {}", path, n, offset));
  return out;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (auto why = write_whole_file(path, text))
    throw DumpError(fmt::format("{}: cannot write the file: {}", path, *why));
}

std::unique_ptr<TensorFile> TensorFile::open(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  (void)file_size(path);  // a missing file is named as such, before its format is guessed
  if (ext == ".npy") return open_npy(path);
  if (ext == ".npz") return open_npz(path);
  if (ext == ".safetensors") return open_safetensors(path);
  throw DumpError(fmt::format("{}: unknown tensor file type '{}' (.npy, .npz, .safetensors)", path, ext));
}

}  // namespace ds::dump
