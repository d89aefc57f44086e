// The memory budget: sizes as --max-memory reads them, and a run over its budget refused before
// any weight is read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memory_estimate.h"
#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
#include "gpu/gpu_candidate.h"
#endif
#include "load_model.h"
#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

struct SizeCase {
  const char* name;
  const char* text;
  std::optional<std::uint64_t> bytes;
};

class MemorySize : public ::testing::TestWithParam<SizeCase> {};

TEST_P(MemorySize, ParsesAsTheFlagDocuments) {
  EXPECT_EQ(parse_memory_size(GetParam().text), GetParam().bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Table, MemorySize,
    ::testing::Values(SizeCase{"Bytes", "1000000", 1000000}, SizeCase{"BytesWithB", "4096B", 4096},
                      SizeCase{"Kibibytes", "64K", 64 * 1024}, SizeCase{"Mebibytes", "512M", 512ull << 20},
                      SizeCase{"Gibibytes", "3G", 3ull << 30}, SizeCase{"LowerCase", "3g", 3ull << 30},
                      SizeCase{"GiBSuffix", "2GiB", 2ull << 30}, SizeCase{"GBSuffix", "2GB", 2ull << 30},
                      SizeCase{"Fraction", "1.5G", 3ull << 29}, SizeCase{"Tebibytes", "1T", 1ull << 40},
                      SizeCase{"Empty", "", std::nullopt}, SizeCase{"Zero", "0", std::nullopt},
                      SizeCase{"Negative", "-1G", std::nullopt}, SizeCase{"UnknownUnit", "3Q", std::nullopt},
                      SizeCase{"Word", "lots", std::nullopt}, SizeCase{"TrailingJunk", "3G!", std::nullopt},
                      SizeCase{"Huge", "1e30", std::nullopt}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MemoryEstimate, WeightsOfARealShapePresetAreItsParameterCountInItsDtype) {
  // Qwen2.5-0.5B has 494,032,768 parameters (tied embeddings, biased q/k/v; the biases are
  // optional roles the estimate leaves out: 0.1% of the model).
  const ModelConfig cfg = ref::synthetic_config("qwen2.5-0.5b");
  const std::uint64_t n = weight_elements(cfg);
  EXPECT_GT(n, 493000000u);
  EXPECT_LE(n, 494032768u);
}

TEST(MemoryEstimate, GrowsWithLayersAndWithASecondMode) {
  RunOptions o;
  const CandidateMemory simt{"simt", DType::f16};
  const ModelConfig one = ref::load_config("synthetic:qwen2.5-0.5b", 1);
  const ModelConfig two = ref::load_config("synthetic:qwen2.5-0.5b", 2);
  const std::uint64_t a = estimate_memory(one, 4, o, simt).total(),
                      b = estimate_memory(two, 4, o, simt).total();
  EXPECT_LT(a, b);
  o.modes = {Mode::isolated, Mode::chained};
  EXPECT_LT(b, estimate_memory(two, 4, o, simt).total());
}

// run --baseline loads a second candidate in a child of its own: its copy of the weights counts.
TEST(MemoryEstimate, ABaselineAddsItsOwnCopyOfTheWeights) {
  RunOptions o;
  o.isolate_process = true;
  // A plugin holds a copy of the weights it converts (at least 2 bytes per element); simt and
  // cpu-f16 read them in place.
  const CandidateMemory simt{"simt", DType::f16}, plugin{"my-plugin", DType::f16};
  const ModelConfig cfg = ref::load_config("synthetic:qwen2.5-0.5b", 2);
  const MemoryEstimate alone = estimate_memory(cfg, 2, o, simt);
  const MemoryEstimate against = estimate_memory(cfg, 2, o, simt, &plugin);
  EXPECT_GE(against.total() - alone.total(), weight_elements(cfg) * 2);
  EXPECT_NE(against.str().find("baseline my-plugin"), std::string::npos) << against.str();
  EXPECT_EQ(alone.str().find("baseline"), std::string::npos) << alone.str();
}

TEST(MemoryEstimate, ACandidateReadingInPlaceAddsNoCopy) {
  RunOptions o;
  CandidateMemory copying{"plugin", DType::f16}, in_place{"simt", DType::f16};
  in_place.in_place = true;
  const ModelConfig cfg = ref::load_config("synthetic:qwen2.5-0.5b", 2);
  const MemoryEstimate a = estimate_memory(cfg, 2, o, copying), b = estimate_memory(cfg, 2, o, in_place);
  // bf16 weights: the copying candidate holds 2 bytes an element more.
  EXPECT_EQ(a.total() - b.total(), weight_elements(cfg) * 2);
  EXPECT_EQ(b.str().find("candidate"), std::string::npos) << b.str();  // a zero part is left out
  EXPECT_NE(a.str().find("candidate"), std::string::npos) << a.str();
}

// A quantized model (0.56 bytes a weight, Q4_K_M): a candidate that decodes its matrices holds an
// f32 copy in its process; one that reads the blocks (cpu-f16, simt) holds none.
TEST(MemoryEstimate, ACandidateReadingQuantizedBlocksAddsNoDecodedCopy) {
  RunOptions o;
  CandidateMemory decoding{"plugin", DType::f16}, reading{"simt", DType::f16};
  decoding.in_place = reading.in_place = true;
  reading.reads_quantized = true;
  const ModelConfig cfg = ref::load_config("synthetic:qwen2.5-0.5b", 2);
  const MemoryEstimate a = estimate_memory(cfg, 0.56, o, decoding),
                       b = estimate_memory(cfg, 0.56, o, reading);
  EXPECT_EQ(a.total() - b.total(), weight_elements(cfg) * 4);
  EXPECT_EQ(b.str().find("candidate"), std::string::npos) << b.str();
}

#ifdef DRIFTSCOPE_HAVE_SIMT_KERNELS
// simt reads a decoder's weights in place (q, k, v, gate and up each as stored) and packs only a
// GDN layer's [qkv | z] and [beta | alpha] into buffers of its own.
TEST(MemoryEstimate, SimtCountsOnlyTheMatricesItPacks) {
  RunOptions o;
  CandidateMemory bare{"simt", DType::f16}, simt{"simt", DType::f16};
  bare.in_place = simt.in_place = true;
  simt.copied_roles = gpu::GpuCandidate::packed_roles;
  const ModelConfig dense = ref::load_config("synthetic:llama3.2-1b");
  EXPECT_EQ(estimate_memory(dense, 2, o, simt).total(), estimate_memory(dense, 2, o, bare).total());
  const ModelConfig hybrid = ref::load_config("synthetic:qwen3-next-80b-a3b", 4);
  std::uint64_t packed = 0;
  for (int l = 0; l < hybrid.n_layers; ++l)
    if (hybrid.block_kind(l) == BlockKind::gdn)
      packed += std::uint64_t(hybrid.hidden) *
                (hybrid.gdn_conv_dim() + hybrid.gdn_value_dim() + 2 * std::uint64_t(hybrid.gdn_v_heads));
  ASSERT_GT(packed, 0u);
  EXPECT_EQ(estimate_memory(hybrid, 2, o, simt).total() - estimate_memory(hybrid, 2, o, bare).total(),
            packed * 2);
}
#endif

// Before --from-step only the last prompt row's logits are computed: a long prefill judged from
// its decode step on (the long-positions probe) does not count [T, vocab] logits per reference.
TEST(MemoryEstimate, UnjudgedPrefillCountsOneRowOfLogits) {
  RunOptions o;
  o.prompt_tokens = 2050;
  o.decode_steps = 1;
  const CandidateMemory simt{"simt", DType::f16};
  const ModelConfig cfg = ref::load_config("synthetic:qwen2.5-0.5b", 2);
  const std::uint64_t all_rows = estimate_memory(cfg, 2, o, simt).total();
  o.from_step = 1;
  const std::uint64_t last_row = estimate_memory(cfg, 2, o, simt).total();
  // Oracle, floor and the lane's two copies: 4 x 2049 rows x 2 x vocab doubles fewer.
  EXPECT_EQ(all_rows - last_row, 4ull * 2049 * 2 * std::uint64_t(cfg.vocab) * 8);
}

TEST(MemoryEstimate, RunOverItsBudgetIsRefusedBeforeAnyWeightIsRead) {
  std::vector<std::string> events;
  RunOptions o;
  o.model = "synthetic:qwen2.5-0.5b";
  o.layers = 2;
  o.candidate = "cpu-f16";
  o.max_memory = 1 << 20;
  o.max_memory_text = "1M";
  o.on_event = [&](std::string_view e) { events.emplace_back(e); };
  try {
    run_parity(o, Policy::dtype_defaults());
    FAIL() << "expected the memory budget to refuse";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("estimated"), std::string::npos) << what;
    EXPECT_NE(what.find("weights"), std::string::npos) << what;
    EXPECT_NE(what.find("--max-memory 1M"), std::string::npos) << what;
    EXPECT_NE(what.find("1 MiB"), std::string::npos) << what;
  }
  EXPECT_EQ(events, std::vector<std::string>{"gate"});  // no load_weights, no layer
}

}  // namespace
}  // namespace ds
