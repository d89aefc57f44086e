#include "npy_writer.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

namespace llama_dump {

namespace {

static_assert(sizeof(float) == 4, "float32 .npy data");

// NPY format version 1.0: magic, version, header length (u16 LE), a dict padded with spaces to
// a multiple of 64 bytes and ended by a newline.
void write_npy(const std::string& path, const char* descr, const std::vector<std::int64_t>& shape,
               const void* data, std::size_t bytes) {
  std::string dims;
  for (std::int64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (5,) keeps its comma, (5, 64) does not
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(reinterpret_cast<const char*>(preamble), sizeof preamble);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_le, 2);
  out << header;
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write the file", path));
}

}  // namespace

void write_npy_f32(const std::string& path, const std::vector<std::int64_t>& shape,
                   const std::vector<float>& data) {
  write_npy(path, "<f4", shape, data.data(), data.size() * sizeof(float));
}

void write_npy_i32(const std::string& path, const std::vector<std::int32_t>& data) {
  write_npy(path, "<i4", {static_cast<std::int64_t>(data.size())}, data.data(),
            data.size() * sizeof(std::int32_t));
}

}  // namespace llama_dump
