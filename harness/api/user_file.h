// The one gate every reader of a user's file passes (a model, config.json, a policy, a prompt, a
// dump mapping or member, a trace). A FIFO nobody writes blocks open(2) forever, a device such as
// /dev/zero never ends, and a directory fails deep inside a parser with a message about something
// else; each is refused up front instead, naming the path and what it is. Messages come back as
// text so that each caller throws its own error type and every command keeps its exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ds {

// Files read whole into memory are small by nature (a policy or an HF config.json is kilobytes);
// one of gigabytes is a wrong path, refused from its size before a byte is read.
inline constexpr std::uint64_t kMaxConfigFileBytes = std::uint64_t(16) << 20;
// A prompt file: room for millions of token ids, past any context a supported model has.
inline constexpr std::uint64_t kMaxTokensFileBytes = std::uint64_t(64) << 20;

// "PATH: is a FIFO, not a regular file" when PATH exists and is not a regular file (symbolic
// links followed); nothing for a regular file or a path that does not exist, which each opener
// names in its own words. Only stat(2): nothing is opened.
std::optional<std::string> special_file_problem(const std::string& path);

// Reads all of PATH (`what` names it in messages: "policy file") into `text`; or says why not: it
// cannot be opened, it is not a regular file, or it is larger than `max_bytes`.
std::optional<std::string> read_user_text(const std::string& path, std::uint64_t max_bytes,
                                          std::string_view what, std::string& text);

// The two above, thrown as the caller's error type.
template <class Error>
void refuse_special_file(const std::string& path) {
  if (auto why = special_file_problem(path)) throw Error(*why);
}

template <class Error>
std::string read_user_text(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  std::string text;
  if (auto why = read_user_text(path, max_bytes, what, text)) throw Error(*why);
  return text;
}

}  // namespace ds
