// Internal to the tensor file readers (tensor_files.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tensor_files.h"

namespace ds::dump {

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  Shape shape;
  std::size_t data_offset = 0;
};

NpyHeader parse_npy_header(const std::vector<unsigned char>& bytes, const std::string& where);
std::unique_ptr<TensorFile> open_npy(const std::string& path);
std::unique_ptr<TensorFile> open_npz(const std::string& path);
std::unique_ptr<TensorFile> open_safetensors(const std::string& path);
void write_file(const std::string& path, const std::vector<unsigned char>& bytes);

}  // namespace ds::dump
