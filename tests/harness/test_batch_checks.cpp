// The batch invariance check: bit for bit, or within the floor where the candidate declares a
// batch-dependent reduction order; the leak check whatever the order.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "batch_checks.h"

namespace ds {
namespace {

// y = x + `batched_shift` in a batched call (an order that rounds otherwise), + `leak` x the next
// sequence's first element in sequence 0's rows (a neighbour read).
class ShiftingCandidate final : public Candidate {
 public:
  ShiftingCandidate(double batched_shift, double leak) : shift_(batched_shift), leak_(leak) {}
  std::string name() const override { return "shifting"; }
  std::string description() const override { return "test"; }
  DType storage_dtype() const override { return DType::f32; }
  OpSet capabilities() const override { return {}; }
  std::vector<KernelStep> plan(const ModelConfig&, BlockKind) const override { return {}; }
  void load(const ModelConfig&, const WeightStore&) override {}
  void run(const KernelStep&, const StepContext& ctx, const TensorMap& inputs, TensorMap& outputs) override {
    const Tensor& x = inputs.at("x");
    Tensor y(DType::f32, x.shape());
    const std::int64_t width = x.dim(1);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      double v = x.at(i) + (ctx.seqs.empty() ? 0.0 : shift_);
      if (ctx.seqs.size() > 1 && i < width) v += leak_ * x.at(width);
      y.set(i, v);
    }
    outputs["y"] = std::move(y);
  }

 private:
  double shift_, leak_;
};

struct Case {
  const char* name;
  double shift, leak;
  bool order_varies;
  double floor_limit;
  // (sequence, status) of what is found at stage y; empty: nothing
  std::vector<std::pair<int, Status>> found;
  const char* note;  // words the first finding's note holds
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class BatchChecks : public ::testing::TestWithParam<Case> {};

TEST_P(BatchChecks, FindWhatTheCaseSays) {
  const Case& c = GetParam();
  ShiftingCandidate cand(c.shift, c.leak);
  const KernelStep step{"shift", {"x"}, {"y"}};
  StepContext ctx{nullptr, 0, 0, 0, 2, {SeqSpan{0, 0, 1, 0, 0, true, -1}, SeqSpan{1, 1, 1, 0, 1, true, -1}}};
  TensorMap inputs;
  inputs["x"] = Tensor(DType::f32, {2, 4});
  std::vector<TensorMap> alone(2);
  for (int s = 0; s < 2; ++s) {
    alone[s]["x"] = Tensor(DType::f32, {1, 4});
    for (int e = 0; e < 4; ++e) {
      inputs["x"].set(s * 4 + e, 1.0 + s + 0.25 * e);
      alone[s]["x"].set(e, 1.0 + s + 0.25 * e);
    }
  }
  TensorMap outputs;
  cand.run(step, ctx, inputs, outputs);
  const std::set<std::string, std::less<>> states;
  BatchFindings found;
  check_batch_call(
      cand,
      {step, ctx, inputs, outputs, alone, states, [](const std::string&) { return std::int64_t(0); },
       c.order_varies, [&](std::size_t, const std::string&) { return c.floor_limit; }},
      {}, found);
  std::vector<std::pair<int, Status>> got;
  for (const auto& [key, f] : found) got.emplace_back(key.first, f.status);
  EXPECT_EQ(got, c.found);
  if (!found.empty()) {
    EXPECT_NE(found.begin()->second.note.find(c.note), std::string::npos) << found.begin()->second.note;
  }
}

const Case kCases[] = {
    {"bit_exact_passes", 0, 0, false, NAN, {}, ""},
    {"a_last_bit_moved_is_variant_when_undeclared",
     3e-7,
     0,
     false,
     NAN,
     {{0, Status::batch_variant}, {1, Status::batch_variant}},
     "differs from the same sequence run alone"},
    {"a_declared_order_within_the_floor_passes", 3e-7, 0, true, 1e-6, {}, ""},
    {"a_declared_order_above_the_floor_is_variant",
     1e-5,
     0,
     true,
     1e-6,
     {{0, Status::batch_variant}, {1, Status::batch_variant}},
     "above 1e-06, what the batch-dependent reduction order"},
    {"a_declared_order_without_a_floor_is_held_bit_for_bit",
     3e-7,
     0,
     true,
     NAN,
     {{0, Status::batch_variant}, {1, Status::batch_variant}},
     "at flat index 0"},
    {"a_leak_is_found_whatever_the_order",
     0,
     1e-3,
     true,
     1.0,
     {{0, Status::leak}},
     "perturbing sequence 1's inputs moved sequence 0's y"},
};

INSTANTIATE_TEST_SUITE_P(Cases, BatchChecks, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds
