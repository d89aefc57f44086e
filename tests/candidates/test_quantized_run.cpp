// A run on a quantized GGUF reads its matrices where the loader keeps them, quantized, in the
// oracle, the noise floors and cpu-f16 alike: the run must equal, stage for stage and bit for bit
// in what the candidate wrote, the run of the same model with every matrix decoded to f32 up front
// and written as an F32 GGUF. (An engine's numerics that follow the file's types, act-quant=ggml,
// differ between those two files by design; stored_weights_test holds them to the decoded model
// with the same file types.)
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <ostream>
#include <string>

#include "gpu/gpu_candidate.h"
#include "load_model.h"
#include "loaders/gguf.h"
#include "loaders/quant.h"
#include "reference.h"
#include "registry.h"
#include "runner.h"
#include "synthetic.h"

namespace ds {
namespace {

namespace fs = std::filesystem;

struct QuantRunCase {
  const char* preset;
};
void PrintTo(const QuantRunCase& c, std::ostream* os) { *os << c.preset; }

// A directory of this test's, removed however the test ends (a failed ASSERT returns early).
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("ds-{}-{}", name, getpid())) {
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A short run of `candidate` on `model` in both modes, in this process.
RunOptions short_run(const std::string& candidate, const std::string& model, int decode_steps) {
  RunOptions o;
  o.candidate = candidate;
  o.prompt_tokens = 5;
  o.decode_steps = decode_steps;
  o.modes = {Mode::isolated, Mode::chained};
  o.isolate_process = false;
  o.model = model;
  return o;
}

// The simt and cuda candidates hand the kernels every block type the loader decodes, as stored,
// with the loader's block geometry: none is left to be decoded to f32.
TEST(KernelWType, EveryLoaderBlockTypeHasOne) {
  int block_types = 0;
  for (std::uint32_t code = 0; code < 256; ++code) {
    const auto info = ref::ggml_type_info(code);
    if (!info || info->block_elems == 1) {
      if (info) {
        EXPECT_FALSE(gpu::kernel_wtype(info->name)) << info->name;  // F32, F16, BF16: tensors
      }
      continue;
    }
    ++block_types;
    const std::optional<dsk::WType> wt = gpu::kernel_wtype(info->name);
    ASSERT_TRUE(wt) << info->name;
    EXPECT_EQ(dsk::quant_block(*wt).elems, info->block_elems) << info->name;
    EXPECT_EQ(dsk::quant_block(*wt).bytes, info->block_bytes) << info->name;
  }
  EXPECT_EQ(block_types, 12);
  EXPECT_FALSE(gpu::kernel_wtype("IQ2_XXS"));
}

class QuantizedRun : public testing::TestWithParam<QuantRunCase> {};

TEST_P(QuantizedRun, EqualsTheRunOfTheDecodedModel) {
  const QuantRunCase& c = GetParam();
  const ScratchDir scratch(fmt::format("quant-run-{}", c.preset));
  const fs::path& dir = scratch.path;
  const std::string q8 = (dir / "q8.gguf").string(), f32 = (dir / "f32.gguf").string();
  ref::write_gguf(ref::make_synthetic(c.preset, 7), q8, {ref::GgmlType::Q8_0});
  const Model quant = ref::load_model(q8);
  ASSERT_FALSE(quant.weights.quantized().empty());
  Model whole = quant;
  for (const auto& [name, q] : quant.weights.quantized()) whole.weights.put(name, q.dequantized());
  ref::write_gguf(whole, f32);
  ASSERT_TRUE(ref::load_model(f32).weights.quantized().empty());

  RunOptions o = short_run("cpu-f16", q8, 2);
  const RunReport a = run_parity(o, Policy::dtype_defaults());
  o.model = f32;
  const RunReport b = run_parity(o, Policy::dtype_defaults());
  ASSERT_EQ(a.results.size(), b.results.size());
  ASSERT_GT(a.results.size(), 20u);
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    const StageResult &x = a.results[i], &y = b.results[i];
    const std::string where = fmt::format("{} {}", i, x.key.stage);
    EXPECT_EQ(x.key.stage, y.key.stage) << where;
    EXPECT_EQ(x.cand_hash, y.cand_hash) << where;
    EXPECT_EQ(x.m.max_abs, y.m.max_abs) << where;
    EXPECT_TRUE(x.floor_max_abs == y.floor_max_abs ||
                (x.floor_max_abs != x.floor_max_abs && y.floor_max_abs != y.floor_max_abs))
        << where;
  }
  EXPECT_EQ(a.exit_code, b.exit_code) << a.verdict << " / " << b.verdict;
}

// A candidate computes every step of layer 0 from the quantized rows without decoding a matrix
// whole: cpu-f16 a row at a time, simt's kernels a block at a time (kernels/quant_rows.cuh).
void runs_layer_without_decoding(const std::string& candidate, const Model& m) {
  const ModelConfig& cfg = m.config;
  CandidatePtr cand = make_candidate(candidate);
  cand->load(cfg, m.weights);
  ref::Reference reference(m);
  const std::vector<std::int32_t> tokens = {5, 17, 42};
  Tensor x = reference.embed(tokens, 0).at("embed");
  const TensorMap rs = reference.layer(0, x, 0);
  TensorMap out;
  const StepContext ctx{&cfg, 0, 0, 0, 3};
  for (const KernelStep& step : cand->plan(cfg, cfg.block_kind(0))) {
    TensorMap in;
    for (const std::string& name : step.inputs) {
      const std::string stage = name.substr(name.find(':') == std::string::npos ? 0 : name.find(':') + 1);
      in[name] = (name == "x" ? x : rs.at(stage)).to(DType::f16);
    }
    cand->run(step, ctx, in, out);
  }
  EXPECT_GE(out.size(), 8u) << candidate;
  EXPECT_EQ(m.weights.dequantized_count(), 0u) << candidate;
}

TEST_P(QuantizedRun, CpuF16AndSimtDecodeNoMatrixWhole) {
  const ScratchDir scratch(fmt::format("quant-cpu-{}", GetParam().preset));
  const std::string q8 = (scratch.path / "q8.gguf").string();
  ref::write_gguf(ref::make_synthetic(GetParam().preset, 7), q8, {ref::GgmlType::Q8_0});
  for (const char* candidate : {"cpu-f16", "simt"})
    runs_layer_without_decoding(candidate, ref::load_model(q8));
}

// llama.cpp's Q4_K_M mix at real widths: Q4_K, and Q6_K for the last layer's attn_v and
// ffn_down (the experts' down in a MoE), so q, k and v come in two types and fused_qkv gives way to
// a GEMV each, and the experts' gate/up and down are read in their own types; the hybrid's GDN
// layer packs its projections' blocks. simt holds the blocks, decodes none, and the run passes.
class SimtOnQ4KM : public testing::TestWithParam<QuantRunCase> {};
TEST_P(SimtOnQ4KM, ReadsTheBlocksAndPasses) {
  const ScratchDir scratch(fmt::format("q4km-{}", GetParam().preset));
  const std::string file = (scratch.path / "q4km.gguf").string();
  ref::GgufWriteOptions w;
  w.mix = ref::GgufMix::q4_k_m;
  ref::write_gguf(ref::make_synthetic(GetParam().preset, 7), file, w);
  const Model m = ref::load_model(file);
  std::set<std::string> types;
  for (const auto& [name, q] : m.weights.quantized()) types.insert(q.type);
  EXPECT_TRUE(types.count("Q4_K") && types.count("Q6_K")) << fmt::format("{}", fmt::join(types, ", "));
  runs_layer_without_decoding("simt", m);

  const RunReport r = run_parity(short_run("simt", file, 1), Policy::dtype_defaults());
  EXPECT_EQ(r.exit_code, 0) << r.verdict;
  EXPECT_GT(r.results.size(), 20u);
}
INSTANTIATE_TEST_SUITE_P(Table, SimtOnQ4KM,
                         testing::Values(QuantRunCase{"llama-wide"}, QuantRunCase{"qwen3moe-wide"},
                                         QuantRunCase{"gpt2-wide"}, QuantRunCase{"qwen3next-wide"},
                                         QuantRunCase{"mixtral-wide"}),
                         [](const auto& info) {
                           std::string n = info.param.preset;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

INSTANTIATE_TEST_SUITE_P(Table, QuantizedRun,
                         testing::Values(QuantRunCase{"llama-tiny"}, QuantRunCase{"qwen2-bias-tiny"},
                                         QuantRunCase{"gpt2-tiny"}, QuantRunCase{"qwen3moe-tiny"}),
                         [](const auto& info) {
                           std::string n = info.param.preset;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ds
