// The local check of a chained lane (docs/policies.md, "The local check"). Chained mode feeds a
// candidate its own outputs, so every stage's error against the oracle carries all the error fed
// in from upstream; on a quantized engine that is the activation quantization of every matmul
// before it, and a 3% bug hides inside it. Here each stage is also recomputed by two honest
// engines of the candidate's numerics from the candidate's *own* inputs: one summing in f32 term
// after term (the longest error path of a correct f32 engine), one summing exactly (the shortest);
// everything else the numerics model (activation quantization, an f16 KV cache or GELU table) they
// share with the candidate. What is left between the candidate and them is what its own step
// added, and their spread is how far summation order alone may move it.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "numerics.h"
#include "result.h"
#include "reference.h"
#include "run_options.h"

namespace ds {

// Whether a run's chained lane runs the local check: `--local-check on`, or `auto` (the default)
// for an engine's dump, whose only lane is chained and which cannot be fed the oracle's inputs.
// Not in a batch run (each sequence would need honest engines of its own).
bool local_check_runs(const RunOptions& opt, bool dump);

// The second honest engine's numerics: the same, with exact sums (for numerics that sum exactly
// already, the two engines agree but for nothing, and the storage rounding sets the spread).
Numerics with_exact_sums(Numerics n);

// The local check's numbers of one stage (result.h LocalCheck): the candidate against the honest
// step, the two honest steps against each other (raised where the numerics round the stage
// narrower than its storage), the honest step against the reference (the error it carried), and
// the candidate's systematic scale against the honest step, over the whole stage and over each of
// its heads (`head_width` adjacent columns; 0: a stage without heads) and channels (one column over
// the rows, where there are enough rows). `cand` is in `ref`'s shape.
LocalCheck measure_local(const Tensor& ref, const Tensor& cand, const Tensor& honest, const Tensor& alt,
                         DType storage, const Numerics& numerics, std::string_view stage, int head_width);

// The two honest engines of one chained lane.
struct HonestEngines {
  std::unique_ptr<ref::Reference> f32_sums, exact_sums;
  // Recompute one block from the candidate's input `x` and its stages `produced` (each handed to
  // the engines as given, so what follows a stage consumes the candidate's value of it), but for
  // the stages in `filled`: the reference fill computed those, not the engine, so the honest
  // engines compute them too and their spread covers what the engine's own may have been. `shapes`
  // gives each stage's catalog shape (the oracle's tensors). layer < 0: the head (`x` the last
  // layer's output); the embed block has nothing to recompute. Carried state follows the
  // candidate's (Reference::adopt_state).
  void recompute(int layer, int pos0, const Tensor& x, const TensorMap& produced,
                 const std::set<std::string, std::less<>>& filled, const TensorMap& shapes, TensorMap& honest,
                 TensorMap& alt);
};

}  // namespace ds
