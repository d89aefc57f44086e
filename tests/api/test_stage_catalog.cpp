#include <gtest/gtest.h>

#include <set>

#include "ops.h"
#include "stage_catalog.h"

namespace ds {
namespace {

TEST(StageCatalog, NamesAreUniqueWithinEachBlockKind) {
  for (BlockKind k : {BlockKind::decoder, BlockKind::gpt2, BlockKind::gdn, BlockKind::gated_attn,
                      BlockKind::embed, BlockKind::head}) {
    std::set<std::string_view> seen;
    for (const auto& s : block_stages(k)) EXPECT_TRUE(seen.insert(s.name).second) << s.name;
    EXPECT_FALSE(seen.empty());
  }
}

TEST(StageCatalog, QkNormStagesOnlyWhenTheModelHasThem) {
  ModelConfig c;
  c.n_layers = 1;
  c.layer_kinds = {BlockKind::decoder};
  auto has = [&](std::string_view n) {
    for (auto s : stages_for(c, 0))
      if (s == n) return true;
    return false;
  };
  EXPECT_FALSE(has("q_norm"));
  c.qk_norm = true;
  EXPECT_TRUE(has("q_norm"));
  EXPECT_TRUE(has("residual_1"));
  EXPECT_EQ(stages_for(c, kModelLayer).front(), "embed");
}

TEST(Ops, SetAlgebraAndNames) {
  OpSet need{Op::RoPENeox, Op::GQA, Op::QkNorm};
  OpSet have{Op::RoPENeox, Op::GQA};
  EXPECT_FALSE(have.contains(need));
  EXPECT_EQ(need.minus(have).list(), std::vector<Op>{Op::QkNorm});
  EXPECT_EQ(need.minus(have).str(), "[QkNorm]");
  for (unsigned i = 0; i < unsigned(Op::kCount); ++i) EXPECT_EQ(parse_op(op_name(Op(i))), Op(i));
}

}  // namespace
}  // namespace ds
