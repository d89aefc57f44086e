// The fused shuffle loop of the .cu rewrite (shuffle_loop.h): recognise the loop by its text, and
// write the step recording, the body as a lambda, and the fused call.
#include "shuffle_loop.h"

#include "rewrite_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <utility>
#include <vector>

namespace simt::rewrite {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return std::string(s.substr(b, e - b));
}

// One line: the prefix must not add a line to the output.
std::string one_line(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

// Where `name` next occurs in `text` as a whole identifier, from `from` on (npos: nowhere).
std::size_t find_name(std::string_view text, std::string_view name, std::size_t from = 0) {
  for (std::size_t at = text.find(name, from); at != std::string_view::npos; at = text.find(name, at + 1))
    if (word_at(text, at, name)) return at;
  return std::string_view::npos;
}

bool mentions(std::string_view text, std::string_view name) {
  return find_name(text, name) != std::string_view::npos;
}

// Every whole-identifier `name` in `text` replaced by `by`.
std::string replace_name(std::string_view text, std::string_view name, std::string_view by) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = find_name(text, name); at != std::string_view::npos;
       at = find_name(text, name, at + name.size())) {
    out += text.substr(from, at - from);
    out += by;
    from = at + name.size();
  }
  out += text.substr(from);
  return out;
}

// The arguments of the call whose '(' is at `open` (split at its top-level commas), and the index
// just past its ')'; nullopt when the parentheses do not close.
std::optional<std::pair<std::vector<std::string>, std::size_t>> call_args(std::string_view s,
                                                                          std::size_t open) {
  std::vector<std::string> args;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) {
        args.push_back(trim(s.substr(start, i - start)));
        return std::pair{args, i + 1};
      }
    }
    if (c == ',' && depth == 1) {
      args.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return std::nullopt;
}

struct Shuffle {
  std::string_view name;
  std::string_view kind;  // simt::detail::Coll's
};
constexpr std::array<Shuffle, 4> kShuffles{{{"__shfl_sync", "shfl_idx"},
                                            {"__shfl_up_sync", "shfl_up"},
                                            {"__shfl_down_sync", "shfl_down"},
                                            {"__shfl_xor_sync", "shfl_xor"}}};

// Calls that would make the body or the header more than arithmetic on the folded value: another
// collective in either would run inside the fused one, on another lane's behalf.
bool names_a_collective(std::string_view text) {
  static const std::regex collective(
      R"re(\b(__shfl\w*|__syncwarp|__syncthreads\w*|__ballot_sync|__any_sync|__all_sync|__activemask|__match\w*|__reduce\w*|\w*\.sync\s*\(|\w*\.shfl\w*))re");
  const std::string t(text);
  return std::regex_search(t, collective);
}

// Whether `text` calls a function: the recording runs the header and the shuffle's operands once
// more than the loop would where the steps cannot be fused, so a call with an effect would run
// twice. Casts and sizeof are not calls.
bool calls_a_function(std::string_view text) {
  static const std::regex call(R"re(([A-Za-z_]\w*)\s*\()re");
  const std::string t(text);
  for (auto it = std::sregex_iterator(t.begin(), t.end(), call); it != std::sregex_iterator(); ++it) {
    static const std::regex harmless(
        R"re(sizeof|int|unsigned|long|short|char|float|double|bool|size_t|u?int(8|16|32|64)_t)re");
    if (!std::regex_match((*it)[1].str(), harmless)) return true;
  }
  return false;
}

}  // namespace

std::optional<FusedLoop> fuse_shuffle_loop(std::string_view header, std::string_view statement) {
  // The statement holds exactly one shuffle call, of a plain name.
  const Shuffle* shuffle = nullptr;
  std::size_t call_at = std::string_view::npos;
  for (const Shuffle& s : kShuffles) {
    for (std::size_t at = find_name(statement, s.name); at != std::string_view::npos;
         at = find_name(statement, s.name, at + 1)) {
      if (shuffle != nullptr) return std::nullopt;  // two shuffles
      shuffle = &s;
      call_at = at;
    }
  }
  if (shuffle == nullptr) return std::nullopt;
  std::size_t open = call_at + shuffle->name.size();
  while (open < statement.size() && std::isspace(static_cast<unsigned char>(statement[open])) != 0) ++open;
  if (open >= statement.size() || statement[open] != '(') return std::nullopt;
  const auto args = call_args(statement, open);
  if (!args || args->first.size() < 3 || args->first.size() > 4) return std::nullopt;
  const std::vector<std::string>& a = args->first;
  const std::string& x = a[1];
  static const std::regex name(R"re([A-Za-z_]\w*)re");
  if (!std::regex_match(x, name)) return std::nullopt;

  // The statement with the shuffle call as `simt_s_`, matched against the forms folding x.
  const std::string rest =
      trim(fmt::format("{}simt_s_{}", statement.substr(0, call_at), statement.substr(args->second)));
  if (names_a_collective(rest)) return std::nullopt;
  const std::string ops = R"re(([-+*&|^]))re";
  const std::string fns = R"re(((?:::|std::)?(?:fmaxf|fminf|fmax|fmin|max|min)))re";
  const std::array<std::regex, 5> forms{
      std::regex(x + R"re(\s*)re" + ops + R"re(=\s*simt_s_)re"),
      std::regex(x + R"re(\s*=\s*)re" + x + R"re(\s*)re" + ops + R"re(\s*simt_s_)re"),
      std::regex(x + R"re(\s*=\s*simt_s_\s*)re" + ops + R"re(\s*)re" + x),
      std::regex(x + R"re(\s*=\s*)re" + fns + R"re(\s*\(\s*)re" + x + R"re(\s*,\s*simt_s_\s*\))re"),
      std::regex(x + R"re(\s*=\s*)re" + fns + R"re(\s*\(\s*simt_s_\s*,\s*)re" + x + R"re(\s*\))re")};
  if (std::none_of(forms.begin(), forms.end(),
                   [&](const std::regex& f) { return std::regex_match(rest, f); }))
    return std::nullopt;

  // The header declares its own variable (running it twice, once to record the steps, then
  // perhaps as the fallback, changes nothing outside), its condition assigns nothing, and
  // nothing that decides the steps reads x.
  const std::string h(header);
  static const std::regex declared(
      R"re(\s*(?:const\s+)?(?:unsigned\s+int|unsigned|int|long|size_t|auto|uint32_t|int32_t)\s+([A-Za-z_]\w*)\s*=[^;]+;([^;]*);([^;]*))re");
  std::smatch hm;
  if (!std::regex_match(h, hm, declared)) return std::nullopt;
  const std::string var = hm[1].str();
  static const std::regex assigns(R"re((\+\+|--|[^=!<>]=[^=]|<<=|>>=))re");
  if (std::regex_search(hm[2].str(), assigns)) return std::nullopt;
  const std::regex update("\\s*(?:(?:\\+\\+|--)\\s*" + var + "|" + var +
                          "\\s*(?:\\+\\+|--|(?:<<|>>|[-+*/])?=\\s*[^=;,]+))\\s*");
  if (!std::regex_match(hm[3].str(), update)) return std::nullopt;
  if (mentions(h, x) || names_a_collective(h) || calls_a_function(h)) return std::nullopt;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (i != 1 && (mentions(a[i], x) || names_a_collective(a[i]) || calls_a_function(a[i])))
      return std::nullopt;

  const std::string width = a.size() == 4 ? fmt::format(", {}", a[3]) : "";
  FusedLoop out;
  out.prefix = one_line(fmt::format(
      "{{ ::simt::detail::FoldSteps simt_fold_steps_; SIMT_FOLD_UNROLL for ({}) simt_fold_steps_.add({}, "
      "{}{}); "
      "auto simt_fold_body_ = [&](auto& simt_x_, const auto& simt_s_) SIMT_RUNTIME_MEMORY_ONLY {{ {}; }}; "
      "if (simt_fold_steps_.fusable()) {} = ::simt::detail::shfl_fold<::simt::detail::Coll::{}>(SIMT_SITE, "
      "simt_fold_steps_, {}, simt_fold_body_); else ",
      header, a[0], a[2], width, replace_name(rest, x, "simt_x_"), x, shuffle->kind, x));
  out.suffix = " }";
  out.value = x;
  return out;
}

}  // namespace simt::rewrite
