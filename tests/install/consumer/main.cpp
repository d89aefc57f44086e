// A candidate defined outside Driftscope, against the installed headers only.
#include <candidate.h>

#include <cstdio>

struct OutsideKernel : ds::Candidate {
  std::string name() const override { return "outside"; }
  std::string description() const override { return "a kernel built outside the Driftscope tree"; }
  ds::DType storage_dtype() const override { return ds::DType::f16; }
  ds::OpSet capabilities() const override { return {ds::Op::RMSNorm}; }
  std::vector<ds::KernelStep> plan(const ds::ModelConfig&, ds::BlockKind) const override {
    return {{"attn_norm", {"x"}, {"attn_norm"}}};
  }
  void load(const ds::ModelConfig&, const ds::WeightStore&) override {}
  void run(const ds::KernelStep&, const ds::StepContext&, const ds::TensorMap&, ds::TensorMap&) override {}
};

int main() {
  OutsideKernel k;
  const bool ok = k.capabilities().has(ds::Op::RMSNorm) && ds::round_to(ds::DType::f16, 1.0 + 1e-4) == 1.0;
  std::printf("%s %s\n", k.name().c_str(), ok ? "ok" : "broken");
  return ok ? 0 : 1;
}
