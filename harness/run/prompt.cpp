#include "prompt.h"

#include <fmt/format.h>

#include <charconv>

#include "load_model.h"
#include "runner.h"
#include "synthetic.h"
#include "user_file.h"

namespace ds {

namespace {
// A prompt past the longest context any supported model has is a wrong file, not a prompt.
constexpr std::size_t kMaxTokens = 1 << 24;
}  // namespace

std::vector<int> parse_tokens_arg(const std::string& arg) {
  std::string text = arg, source = "--tokens";
  if (!arg.empty() && arg[0] == '@') {
    source = fmt::format("--tokens {}", arg);
    if (auto why = read_user_text(arg.substr(1), kMaxTokensFileBytes, "tokens file", text))
      throw InputError(fmt::format("--tokens: {}", *why));
  }
  std::vector<int> ids;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find_first_of(", \t\r\n", at);
    const std::string item = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (item.empty()) continue;
    int v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || p != item.data() + item.size())
      throw InputError(fmt::format("{}: '{}' (entry {}) is not a token id", source, item, ids.size()));
    if (ids.size() == kMaxTokens)
      throw InputError(fmt::format("{}: more than {} tokens", source, kMaxTokens));
    ids.push_back(v);
  }
  if (ids.empty())
    throw InputError(fmt::format("{}: no token ids (e.g. --tokens 1,5,9 or --tokens @FILE)", source));
  return ids;
}

void check_token_ids(const std::vector<int>& ids, const ModelConfig& cfg, const std::string& source) {
  if (ids.empty()) throw InputError(fmt::format("{}: an empty prompt", source));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= cfg.vocab)
      throw InputError(fmt::format("{}: token id {} at position {} is outside {}'s vocabulary (0..{})",
                                   source, ids[i], i, cfg.name, cfg.vocab - 1));
}

std::vector<int> seeded_prompt(int n, int vocab, std::uint64_t seed, int first) {
  std::vector<int> t;
  if (first >= 0 && n > 0) {
    t.push_back(first);
    --n;
  }
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  for (int i = 0; i < n; ++i) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    t.push_back(int(x % std::uint64_t(vocab)));
  }
  return t;
}

int seeded_prompt_start(const std::string& model_spec) {
  return ref::synthetic_preset(model_spec) ? ref::kSinkToken : -1;
}

}  // namespace ds
