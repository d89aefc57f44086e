// The files other engines dump tensors into: NumPy .npy and .npz (a zip of .npy members, stored
// or deflated) and safetensors. Every file is untrusted input: each header number is checked
// before it is used, and a bad one is a DumpError naming the file (and the tensor), never a read
// outside the file.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ds::dump {

// Bad dump input (a file, a tensor in it, the mapping): the run stops with exit 2.
struct DumpError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One tensor file. A .npy file holds one tensor, named "".
class TensorFile {
 public:
  virtual ~TensorFile() = default;
  // By extension (.npy, .npz, .safetensors); throws DumpError for anything else or a bad header.
  static std::unique_ptr<TensorFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  virtual std::vector<std::string> names() const = 0;
  virtual bool has(std::string_view name) const = 0;
  // The shape as stored, without reading the data.
  virtual Shape shape(std::string_view name) const = 0;
  // Floats keep their dtype (f64, f32, f16, bf16); integers become i32 (range-checked).
  virtual Tensor read(std::string_view name) const = 0;

 protected:
  explicit TensorFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Tensor bytes of `t` as .npy (v1 header); f64, f32, f16 and i32 (bf16 is no NumPy dtype: f32).
void write_npy(const std::string& path, const Tensor& t);
// f64, f32, f16, bf16 and i32 tensors, in the given order.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);

// Internal to the readers, shared by .npy and .npz: a .npy image held in memory, `bytes` being
// the whole image or (header_only) at least its first kNpyHeadBytes; `image_bytes` is the whole
// image's size, checked against the header's shape and dtype in both cases.
inline constexpr std::uint64_t kNpyHeadBytes = 12 + (std::uint64_t(1) << 20);
Tensor parse_npy(const std::vector<unsigned char>& bytes, const std::string& where, bool header_only,
                 Shape* shape_out, std::uint64_t image_bytes);
std::vector<unsigned char> read_file_range(const std::string& path, std::uint64_t offset, std::uint64_t n);
std::uint64_t file_size(const std::string& path);

}  // namespace ds::dump
