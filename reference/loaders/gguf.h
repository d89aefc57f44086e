// GGUF v3 (reference-math.md §5.1-5.3): the reader behind load_model and the writer behind
// driftscope-mkfixture.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load_model.h"
#include "quant.h"
#include "tensor.h"

namespace ds::ref {

struct GgufValue {
  std::uint32_t type = 0;  // GGUF value type code
  std::int64_t i = 0;      // every integer type (u64 above INT64_MAX is refused)
  double f = 0;            // f32 / f64
  std::string s;
  std::vector<GgufValue> arr;
  bool is_int() const { return type <= 5 || type == 7 || type == 10 || type == 11; }
  bool is_float() const { return type == 6 || type == 12; }
};

struct GgufTensorInfo {
  std::string name;
  Shape ne;  // fastest-varying first, as stored
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // from the start of the data section
};

// A parsed GGUF file, memory-mapped; tensor bytes are read on demand.
class GgufFile {
 public:
  explicit GgufFile(std::string path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, GgufValue, std::less<>>& meta() const { return meta_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufValue* find(std::string_view key) const;
  // The tensor decoded to f32, in PyTorch shape order (ne reversed).
  Tensor read(const GgufTensorInfo& t) const;
  // The tensor as a loaded model holds it: F16 and BF16 in their own dtype, block-quantized
  // matrices kept quantized into `w` (decoded a row at a time by their readers), anything else
  // decoded to f32.
  void put_stored(const GgufTensorInfo& t, const std::string& name, WeightStore& w) const;

 private:
  void parse();  // the header and tensor table of the mapped file

  std::string path_;
  const std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const std::byte> mapping_;  // owns base_'s mapping once the file parsed
  std::uint64_t data_start_ = 0;
  std::map<std::string, GgufValue, std::less<>> meta_;
  std::vector<GgufTensorInfo> tensors_;
};

Model load_gguf(const std::string& path, int layers, const LoadOptions& options);
// Only the configuration, from the header: no tensor data is read.
ModelConfig gguf_config(const std::string& path, int layers, const LoadOptions& options);

// How a dense hybrid's GDN layers are written.
enum class GgufGdnLayout {
  llamacpp_tiled,  // general.architecture qwen35, value heads tiled: what llama.cpp loads
  legacy_grouped,  // qwen3next, value heads grouped: the files this project wrote before
};

// How a file's matrices get their types: all in GgufWriteOptions::matrix_type, or as llama.cpp's
// `llama-quantize ... Q4_K_M` assigns them (gguf_writer.cpp, tensor_type).
enum class GgufMix { uniform, q4_k_m };

struct GgufWriteOptions {
  GgmlType matrix_type = GgmlType::F32;  // 2-D weights; vectors are always F32
  GgufMix mix = GgufMix::uniform;        // q4_k_m: matrix_type is not read
  // Further u32 metadata, "<arch>." prefixed, for keys a converter writes that ModelConfig has
  // no field for (tests use it to build files the reader must refuse, e.g. expert_count).
  std::vector<std::pair<std::string, std::uint32_t>> extra_u32;
  GgufGdnLayout gdn_layout = GgufGdnLayout::llamacpp_tiled;
};
// Writes `model` the way llama.cpp's converter would lay it out (LLaMA Q/K permuted; for qwen35
// (1 + w) norms pre-added, the post-attention norm name, GDN value heads tiled and
// rope.dimension_sections; for qwen3next the same norms, value heads grouped, the GDN input
// projections fused into ssm_in / ssm_beta_alpha, the shared-expert gate a vector).
void write_gguf(const Model& model, const std::string& path, const GgufWriteOptions& options = {});

}  // namespace ds::ref
