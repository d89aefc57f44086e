// The safetensors container: a little-endian u64 header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data the
// offsets index (counted from the end of the header), row-major and little-endian. The reference's
// model loader and the dump candidate both read it through this one parser, which checks every
// number of the header before anything is sized from it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ds::safetensors {

// A malformed file; the message says what and where in the header (callers add the path).
struct FormatError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Entry {
  std::string name;
  std::string code;          // the file's dtype: F64, F32, F16, BF16, I32 or I64
  DType dtype = DType::f32;  // in memory: I64 is read into i32 (each value range-checked)
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // bytes of the data section
};

struct Header {
  std::uint64_t data_start = 0, data_size = 0;
  std::vector<Entry> entries;  // in data order
};

// The header of a `file_size`-byte file; `read(offset, n)` returns those bytes of the file.
Header parse_header(std::uint64_t file_size,
                    const std::function<std::vector<unsigned char>(std::uint64_t, std::uint64_t)>& read);
// An entry's data (its end - begin bytes) as a tensor.
Tensor decode(const Entry& e, const std::vector<unsigned char>& bytes);
// The file image of `tensors` (F64, F32, F16, BF16, I32), in order, the data 8-byte aligned;
// `metadata` becomes "__metadata__" (last) when there is any.
std::vector<unsigned char> encode(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::vector<std::pair<std::string, std::string>>& metadata = {});

}  // namespace ds::safetensors
