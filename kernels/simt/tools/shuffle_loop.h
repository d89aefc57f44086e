// A step of the .cu rewrite (cuda_rewrite.h): a warp reduction written as a loop of shuffles,
//   for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, offset);
// becomes one fused collective (simt::detail::shfl_fold, simt_cpu.h) with the same bits, so each
// lane suspends once instead of once a step. The loop stays in the output as the fallback the
// runtime takes when the steps cannot be fused (more than FoldSteps::kMax, a mask or width that
// changes between steps).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace simt::rewrite {

// What to write before and after the loop's own text (which becomes the fallback branch): both
// on the loop's first line, so every line keeps its number.
struct FusedLoop {
  std::string prefix;
  std::string suffix;
  std::string value;  // the folded variable's name
};

// `header`: the text between the `for`'s parentheses; `statement`: the loop's one statement
// without its `;` (braces removed). Fused only when the loop declares its own variable in the
// header, the header and the shuffle's mask, source and width do not read the folded variable,
// neither calls a function (casts and sizeof aside: the recording runs them once more where the
// loop falls back), and the statement is one of
//   x OP= SHFL(mask, x, b[, width])          OP one of + - * & | ^
//   x = x OP SHFL(...)   x = SHFL(...) OP x
//   x = F(x, SHFL(...))  x = F(SHFL(...), x) F one of fmaxf fminf fmax fmin max min
// with SHFL one of __shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync and x a plain
// name. Anything else is nullopt and the loop is left as written. (Whether x is a variable in
// memory, which other threads see at every step, the caller checks: it has the whole file.)
std::optional<FusedLoop> fuse_shuffle_loop(std::string_view header, std::string_view statement);

}  // namespace simt::rewrite
