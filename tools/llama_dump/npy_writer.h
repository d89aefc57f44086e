// Writing the .npy files `--candidate dump:` reads: little-endian float32 or int32, C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llama_dump {

// Throws std::runtime_error naming `path` when it cannot be written.
void write_npy_f32(const std::string& path, const std::vector<std::int64_t>& shape,
                   const std::vector<float>& data);
void write_npy_i32(const std::string& path, const std::vector<std::int32_t>& data);

}  // namespace llama_dump
