// SHA-256 of a file (FIPS 180-4): traces record which plugin build ran.
#pragma once

#include <string>

namespace ds {

// Lowercase hex digest; throws std::runtime_error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);
// Lowercase hex digest of a byte string.
std::string sha256_hex(const std::string& bytes);

}  // namespace ds
