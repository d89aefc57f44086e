// GPT-2 beyond the every-family table (test_every_family.cpp, which runs simt and cpu-f16 on the
// synthetic preset and both fixture files): real GPT-2 small shapes, and the learned-position
// table's bound.
#include <gtest/gtest.h>

#include <string>

#include "registry.h"
#include "runner.h"
#include "stage_catalog.h"

namespace ds {
namespace {

// GPT-2 small's shapes (768 wide, 12 heads of 64, a 3072-wide MLP, 50257 tokens), one layer.
TEST(Gpt2Parity, SmallRealShapesOneLayerOnSimt) {
  RunOptions o;
  o.model = "synthetic:gpt2-small";
  o.candidate = "simt";
  o.layers = 1;
  o.prompt_tokens = 2;
  o.decode_steps = 1;
  o.isolate_process = false;
  const RunReport r = run_parity(o, Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, kExitParity) << r.verdict;
}

// A decode past the learned position table is bad input, named, not an out-of-bounds read.
TEST(Gpt2Positions, DecodePastTheTableIsRefusedByName) {
  for (const char* cand : {"simt", "cpu-f16"}) {
    const Model model = load_model_spec("synthetic:gpt2-tiny", 0, 0);
    CandidatePtr c = make_candidate(cand);
    c->load(model.config, model.weights);
    const int n_pos = int(model.weights.get("position_embd.weight").dim(0));
    Tensor tok(DType::i32, {2});
    tok.set(0, 1);
    tok.set(1, 2);
    TensorMap in, out;
    in["tokens"] = tok;
    const KernelStep embed = c->plan(model.config, BlockKind::embed).at(0);
    const StepContext ctx{&model.config, 1, kModelLayer, n_pos - 1, 2};
    try {
      c->run(embed, ctx, in, out);
      ADD_FAILURE() << cand << " embedded position " << n_pos << " of a " << n_pos << "-row table";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("learned positions"), std::string::npos)
          << cand << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace ds
