// Identifier tests that the steps of the .cu rewrite share (cuda_rewrite.cpp, shuffle_loop.cpp).
#pragma once

#include <cctype>
#include <cstddef>
#include <string_view>

namespace simt::rewrite {

inline bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Whether `w` stands at `at` in `text` as a whole identifier, not part of a longer one.
inline bool word_at(std::string_view text, std::size_t at, std::string_view w) {
  return text.substr(at, w.size()) == w && (at == 0 || !is_ident(text[at - 1])) &&
         (at + w.size() >= text.size() || !is_ident(text[at + w.size()]));
}

}  // namespace simt::rewrite
