// The simt candidate reads every weight matrix in place except the ones it packs from several
// stored tensors (GDN layers only). GpuCandidate::packed_roles names those for the memory estimate; this
// table holds it to what load() really copies, for each block kind (decoder, gated attention + GDN, GPT-2, a
// MoE decoder whose stacked experts and router are read in place, Qwen3-Next whose shared expert is too), so
// the estimate cannot drift from the loader.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "gpu/gpu_candidate.h"
#include "load_model.h"
#include "registry.h"

namespace ds {
namespace {

class PackedWeights : public ::testing::TestWithParam<const char*> {};

TEST_P(PackedWeights, LoadCopiesExactlyThePackedRoles) {
  const Model m = ref::load_model(std::string("synthetic:") + GetParam(), 0);
  CandidatePtr cand = make_candidate("simt");
  auto* gpu = dynamic_cast<gpu::GpuCandidate*>(cand.get());
  ASSERT_NE(gpu, nullptr);
  cand->load(m.config, m.weights);
  std::uint64_t packed = 0;
  for (int l = 0; l < m.config.n_layers; ++l)
    for (std::string_view role : gpu::GpuCandidate::packed_roles(m.config.block_kind(l)))
      if (const Tensor* t = m.weights.find_layer(l, role)) packed += std::uint64_t(t->numel());
  EXPECT_EQ(gpu->copied_matrix_elements(), packed);
  // Only GDN layers pack ([qkv | z], [beta | alpha]); decoders launch per stored matrix and
  // GPT-2 stores c_attn packed already.
  bool has_gdn = false;
  for (int l = 0; l < m.config.n_layers; ++l) has_gdn = has_gdn || m.config.block_kind(l) == BlockKind::gdn;
  EXPECT_EQ(packed != 0, has_gdn);
}

INSTANTIATE_TEST_SUITE_P(Table, PackedWeights,
                         ::testing::Values("qwen2-tiny", "qwen35-tiny", "gpt2-tiny", "qwen3moe-tiny",
                                           "qwen3next-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace ds
