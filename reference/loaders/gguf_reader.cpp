#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "family.h"
#include "gdn_layout.h"
#include "gguf.h"
#include "qk_permute.h"
#include "user_file.h"

namespace ds::ref {

namespace {

// Bounds-checked little-endian reads over the mapped file.
class Cursor {
 public:
  Cursor(const std::string& path, const std::byte* p, std::size_t n) : path_(path), p_(p), n_(n) {}
  template <class T>
  T get(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(std::string_view what) {
    const auto len = get<std::uint64_t>(what);
    need(len, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), std::size_t(len));
    pos_ += std::size_t(len);
    return s;
  }
  std::size_t pos() const { return pos_; }
  std::size_t left() const { return n_ - pos_; }

 private:
  void need(std::uint64_t bytes, std::string_view what) const {
    if (bytes > n_ - pos_)
      throw ModelError(fmt::format("{}: truncated while reading {} at byte {}", path_, what, pos_));
  }
  const std::string& path_;
  const std::byte* p_;
  std::size_t n_, pos_ = 0;
};

// The fewest bytes a metadata value of `type` takes in the file (unknown types are refused when
// read): how a count read from the file is checked against the bytes that remain.
std::uint64_t min_value_bytes(std::uint32_t type) {
  switch (type) {
    case 0:
    case 1:
    case 7: return 1;
    case 2:
    case 3: return 2;
    case 4:
    case 5:
    case 6: return 4;
    case 8:
    case 10:
    case 11:
    case 12: return 8;  // a string: its 8-byte length
    case 9: return 12;  // an array: element type and count
    default: return 1;
  }
}

// The fewest bytes of one key/value pair (key length, value type, a 1-byte value) and of one
// tensor description (name length, rank, one dimension, type, offset).
constexpr std::uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Elements of one tensor: more than any checkpoint holds, and small enough that byte counts of
// every supported type cannot overflow.
constexpr std::uint64_t kMaxTensorElements = std::uint64_t(1) << 40;
constexpr std::uint64_t kMaxAlignment = std::uint64_t(1) << 20;

GgufValue read_value(Cursor& c, std::uint32_t type, const std::string& key, const std::string& path,
                     int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case 0: v.i = c.get<std::uint8_t>(key); break;
    case 1: v.i = c.get<std::int8_t>(key); break;
    case 2: v.i = c.get<std::uint16_t>(key); break;
    case 3: v.i = c.get<std::int16_t>(key); break;
    case 4: v.i = c.get<std::uint32_t>(key); break;
    case 5: v.i = c.get<std::int32_t>(key); break;
    case 6: v.f = c.get<float>(key); break;
    case 7: v.i = c.get<std::uint8_t>(key) != 0; break;
    case 8: v.s = c.str(key); break;
    case 9: {
      if (depth > 4) throw ModelError(fmt::format("{}: metadata {}: arrays nested too deep", path, key));
      const auto et = c.get<std::uint32_t>(key);
      const auto n = c.get<std::uint64_t>(key);
      // Checked before any element is read or stored: each takes at least min_value_bytes.
      if (n > c.left() / min_value_bytes(et))
        throw ModelError(
            fmt::format("{}: metadata {}: array count {} does not fit the {} bytes left in the file", path,
                        key, n, c.left()));
      v.arr.reserve(std::size_t(n));
      for (std::uint64_t i = 0; i < n; ++i) v.arr.push_back(read_value(c, et, key, path, depth + 1));
      break;
    }
    case 10: {
      const auto u = c.get<std::uint64_t>(key);
      if (u > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        throw ModelError(fmt::format("{}: metadata {}: value {} out of range", path, key, u));
      v.i = std::int64_t(u);
      break;
    }
    case 11: v.i = c.get<std::int64_t>(key); break;
    case 12: v.f = c.get<double>(key); break;
    default: throw ModelError(fmt::format("{}: metadata {}: unknown value type {}", path, key, type));
  }
  return v;
}

}  // namespace

GgufFile::GgufFile(std::string path) : path_(std::move(path)) {
  refuse_special_file<ModelError>(path_);
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelError(fmt::format("{}: cannot open: {}", path_, std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  size_ = std::size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) base_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  if (!base_) throw ModelError(fmt::format("{}: cannot map the file (size {})", path_, size_));
  // A refused file is unmapped here: no destructor runs for a constructor that throws, and a
  // process that tries many files (gate, a fuzzer) would run out of mappings.
  try {
    parse();
  } catch (...) {
    ::munmap(const_cast<std::byte*>(base_), size_);
    throw;
  }
  mapping_ = std::shared_ptr<const std::byte>(
      base_, [size = size_](const std::byte* p) { ::munmap(const_cast<std::byte*>(p), size); });
}

void GgufFile::parse() {
  Cursor c(path_, base_, size_);
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0)
    throw ModelError(fmt::format("{}: not a GGUF file (bad magic)", path_));
  c.get<std::uint32_t>("magic");
  const auto version = c.get<std::uint32_t>("version");
  if (version < 2 || version > 3)
    throw ModelError(fmt::format("{}: GGUF version {} (expected 3)", path_, version));
  const auto n_tensors = c.get<std::uint64_t>("tensor_count");
  const auto n_kv = c.get<std::uint64_t>("kv_count");
  if (n_kv > c.left() / kMinKvBytes)
    throw ModelError(
        fmt::format("{}: kv_count = {} does not fit the {} bytes left in the file", path_, n_kv, c.left()));
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.str("metadata key");
    const auto type = c.get<std::uint32_t>(key);
    meta_[key] = read_value(c, type, key, path_, 0);
  }
  if (n_tensors > c.left() / kMinTensorInfoBytes)
    throw ModelError(fmt::format("{}: tensor_count = {} does not fit the {} bytes left in the file", path_,
                                 n_tensors, c.left()));
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.str("tensor name");
    const auto nd = c.get<std::uint32_t>(t.name);
    if (nd == 0 || nd > 4)
      throw ModelError(fmt::format("{}: tensor {}: n_dims = {} (1 to 4)", path_, t.name, nd));
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < nd; ++d) {
      const auto ne = c.get<std::uint64_t>(t.name);
      // Stored unsigned; a value with the top bit set is a negative dimension to every reader.
      if (ne == 0 || ne > kMaxTensorElements)
        throw ModelError(fmt::format(
            "{}: tensor {}: ne[{}] = {}{} is out of range (1 to {})", path_, t.name, d, ne,
            std::int64_t(ne) < 0 ? fmt::format(" ({})", std::int64_t(ne)) : "", kMaxTensorElements));
      if (elements > kMaxTensorElements / ne)
        throw ModelError(fmt::format("{}: tensor {}: ne[0..{}] = {}, {} hold more than {} elements", path_,
                                     t.name, d, fmt::join(t.ne, ", "), ne, kMaxTensorElements));
      elements *= ne;
      t.ne.push_back(std::int64_t(ne));
    }
    t.type = c.get<std::uint32_t>(t.name);
    t.offset = c.get<std::uint64_t>(t.name);
    tensors_.push_back(std::move(t));
  }
  std::uint64_t align = 32;
  if (const GgufValue* a = find("general.alignment")) {
    if (!a->is_int() || a->i <= 0 || (a->i & (a->i - 1)) || std::uint64_t(a->i) > kMaxAlignment)
      throw ModelError(fmt::format("{}: general.alignment = {} must be a power of two up to {}", path_, a->i,
                                   kMaxAlignment));
    align = std::uint64_t(a->i);
  }
  data_start_ = (c.pos() + align - 1) / align * align;
  const std::uint64_t data_size = data_start_ < size_ ? size_ - data_start_ : 0;
  for (const auto& t : tensors_) {
    if (t.offset % align)
      throw ModelError(
          fmt::format("{}: tensor {}: offset {} not aligned to {}", path_, t.name, t.offset, align));
    // Every tensor's bytes must lie inside the data section, checked without overflow (an offset
    // near 2^64 would otherwise wrap the sum). A type this reader cannot decode is refused when
    // the tensor is read; its offset must still lie inside.
    std::uint64_t bytes = 0;
    if (const auto info = ggml_type_info(t.type)) {
      if (t.ne[0] % info->block_elems)
        throw ModelError(fmt::format("{}: tensor {}: row of {} elements is not a whole number of {} blocks",
                                     path_, t.name, t.ne[0], info->name));
      std::int64_t n = 1;
      for (std::int64_t ne : t.ne) n *= ne;
      bytes = std::uint64_t(ggml_nbytes(*info, n));
    }
    if (t.offset > data_size || bytes > data_size - t.offset)
      throw ModelError(fmt::format(
          "{}: tensor {}: offset {} and {} bytes of data lie beyond the data section ({} bytes from byte {})",
          path_, t.name, t.offset, bytes, data_size, data_start_));
  }
}

GgufFile::~GgufFile() = default;  // the mapping goes with the last matrix that reads it

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = meta_.find(key);
  return it == meta_.end() ? nullptr : &it->second;
}

Tensor GgufFile::read(const GgufTensorInfo& t) const {
  const auto info = ggml_type_info(t.type);
  if (!info)
    throw ModelError(fmt::format("{}: tensor {}: ggml type {} is not supported ({})", path_, t.name, t.type,
                                 ggml_supported_types()));
  // The constructor checked the block size and that the bytes lie inside the file.
  Shape shape(t.ne.rbegin(), t.ne.rend());
  Tensor out(DType::f32, shape);
  dequantize(info->type, base_ + data_start_ + t.offset, out.data<float>(), out.numel());
  return out;
}

void GgufFile::put_stored(const GgufTensorInfo& t, const std::string& name, WeightStore& w) const {
  const auto info = ggml_type_info(t.type);
  const Shape shape(t.ne.rbegin(), t.ne.rend());
  const std::byte* src = base_ + data_start_ + t.offset;
  if (info && (info->type == GgmlType::F16 || info->type == GgmlType::BF16)) {
    Tensor out(info->type == GgmlType::F16 ? DType::f16 : DType::bf16, shape);
    std::memcpy(out.raw(), src, out.nbytes());
    w.put(name, std::move(out));
    return;
  }
  const QuantDecode decode = info ? ggml_row_decoder(info->type) : nullptr;
  if (decode == nullptr || shape.size() < 2) {
    w.put(name, read(t));
    return;
  }
  // The constructor checked the block size and that the bytes lie inside the file. The rows stay
  // in the mapping, which lives as long as any matrix read from it.
  w.put_quantized(name, QuantMatrix{.type = std::string(info->name),
                                    .shape = shape,
                                    .row_bytes = std::size_t(ggml_nbytes(*info, shape.back())),
                                    .decode = decode,
                                    .owner = mapping_,
                                    .data = src});
}

namespace {

class ConfigReader {
 public:
  ConfigReader(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  // Any integer type; per-layer arrays give their first element.
  std::optional<std::int64_t> integer(std::string_view key) const {
    const GgufValue* v = value(key);
    if (!v) return std::nullopt;
    if (v->type == 9 && !v->arr.empty()) v = &v->arr.front();
    if (!v->is_int()) throw ModelError(fmt::format("{}: {}: expected an integer", f_.path(), full(key)));
    return v->i;
  }
  // An integer field within [min, max] (family.h's bounds); nullopt when absent.
  std::optional<int> bounded(std::string_view key, std::int64_t max, std::int64_t min = 1) const {
    const auto v = integer(key);
    if (!v) return std::nullopt;
    if (*v < min || *v > max)
      throw ModelError(
          fmt::format("{}: {} = {} is out of range ({} to {})", f_.path(), full(key), *v, min, max));
    return int(*v);
  }
  int require_int(std::string_view key, std::int64_t max) const {
    const auto v = bounded(key, max);
    if (!v) throw ModelError(fmt::format("{}: missing metadata {}", f_.path(), full(key)));
    return *v;
  }
  // f32 values come back as the shortest decimal that round-trips (1e-06f -> 1e-6): the
  // number the converter was given, so a GGUF and its config.json agree exactly.
  std::optional<double> real(std::string_view key) const {
    const GgufValue* v = value(key);
    if (!v) return std::nullopt;
    if (v->is_int()) return double(v->i);
    if (!v->is_float()) throw ModelError(fmt::format("{}: {}: expected a number", f_.path(), full(key)));
    // A hyper-parameter that is not finite (norm epsilon +Inf, a NaN RoPE base) puts Inf or NaN in
    // every stage of both sides alike, where no comparison can see a bug: refused before compute.
    if (!std::isfinite(v->f))
      throw ModelError(
          fmt::format("{}: {} = {}: a hyper-parameter must be a finite number", f_.path(), full(key), v->f));
    if (v->type == 6) return std::stod(fmt::format("{}", float(v->f)));
    return v->f;
  }
  std::string full(std::string_view key) const { return fmt::format("{}.{}", arch_, key); }

 private:
  const GgufValue* value(std::string_view key) const { return f_.find(full(key)); }
  const GgufFile& f_;
  std::string arch_;
};

// Router and expert tensors (llama.cpp's names) in a family whose MoE FFN the reference does not
// implement, and shared experts (*_shexp) outside Qwen3-Next (Qwen2-MoE's have no reference block).
// Refused from the header, before any tensor is read or anything computed.
void refuse_experts(const GgufFile& f, Family family) {
  for (const auto& t : f.tensors()) {
    const bool routed =
        t.name.find(".ffn_gate_inp.") != std::string::npos || t.name.find("_exps.") != std::string::npos;
    const bool shared = t.name.find("_shexp.") != std::string::npos;
    if ((shared && family != Family::qwen3next) || (routed && !family_has_experts(family)))
      throw ModelError(fmt::format(
          "{}: tensor {}: a mixture-of-experts model the reference does not implement (routed experts are "
          "supported for qwen3moe, qwen3next and llama/Mixtral, shared experts *_shexp for qwen3next only; "
          "llama.cpp's qwen3next is the MoE Qwen3-Next, the dense hybrid is qwen35)",
          f.path(), t.name));
  }
}

// rope.dimension_sections (qwen35's multimodal RoPE): which position component each rotary pair
// reads. A text token's components are all its position, so any split gives plain NEOX RoPE;
// the value is only checked to be what llama.cpp reads (non-negative integers).
void check_rope_sections(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v) return;
  const bool ints = v->type == 9 && std::all_of(v->arr.begin(), v->arr.end(),
                                                [](const GgufValue& e) { return e.is_int() && e.i >= 0; });
  if (!ints)
    throw ModelError(fmt::format("{}: {}: expected an array of non-negative integers", f.path(), key));
}

// expert_count .. expert_feed_forward_length into `c` (families with experts only).
void read_experts(const GgufFile& f, const ConfigReader& r, ModelConfig& c) {
  const auto experts = r.bounded("expert_count", kMaxExperts, 0);
  if (experts && *experts > 0 && !family_has_experts(c.family))
    throw ModelError(
        fmt::format("{}: {} = {}: mixture-of-experts MLPs are not supported for {} (the reference "
                    "implements them for qwen3moe, qwen3next and llama/Mixtral)",
                    f.path(), r.full("expert_count"), *experts, c.arch));
  if (c.family == Family::qwen3moe && !(experts && *experts > 0))
    throw ModelError(
        fmt::format("{}: missing metadata {} (qwen3moe is all experts)", f.path(), r.full("expert_count")));
  // (A qwen3next file without experts was read as the dense qwen35 hybrid: read_config.)
  if (!experts || *experts == 0) return;
  c.n_experts = *experts;
  c.n_experts_used = r.bounded("expert_used_count", c.n_experts).value_or(0);
  if (c.n_experts_used == 0)
    throw ModelError(fmt::format("{}: missing metadata {}", f.path(), r.full("expert_used_count")));
  // llama.cpp: qwen3moe's experts are expert_feed_forward_length wide (else n_ff / n_used), a
  // llama MoE's (Mixtral) are feed_forward_length wide.
  const int fallback = c.family == Family::llama ? c.ffn : c.ffn / c.n_experts_used;
  c.expert_ffn = r.bounded("expert_feed_forward_length", kMaxDim).value_or(fallback);
  // llama.cpp's qwen3moe graph renormalises the chosen weights unconditionally; a file that says
  // otherwise (expert_weights_norm false, from a checkpoint with norm_topk_prob false) is read as it says.
  c.moe_norm_topk = r.integer("expert_weights_norm").value_or(1) != 0;
  // llama.cpp's qwen3next: the shared expert is expert_shared_feed_forward_length wide, else
  // feed_forward_length.
  if (c.family == Family::qwen3next)
    c.shared_expert_ffn = r.bounded("expert_shared_feed_forward_length", kMaxDim).value_or(c.ffn);
}

ModelConfig read_config(const GgufFile& f, const LoadOptions& opt) {
  const GgufValue* a = f.find("general.architecture");
  if (!a || a->type != 8)
    throw ModelError(fmt::format("{}: missing metadata general.architecture", f.path()));
  const std::string arch = a->s;
  auto family = family_of(arch);
  if (!family)
    throw ModelError(fmt::format("{}: general.architecture '{}' is not supported", f.path(), arch));
  const ConfigReader r(f, arch);
  // A qwen3next file without experts is the dense hybrid as this project wrote it before it was
  // llama.cpp's qwen35 (fixtures/legacy); llama.cpp itself refuses such a file.
  if (*family == Family::qwen3next && r.bounded("expert_count", kMaxExperts, 0).value_or(0) == 0)
    family = Family::qwen35;
  refuse_experts(f, *family);
  ModelConfig c;
  c.name = f.path();
  c.arch = arch;
  c.family = *family;
  c.n_layers = r.require_int("block_count", kMaxLayers);
  c.hidden = r.require_int("embedding_length", kMaxDim);
  c.n_heads = r.require_int("attention.head_count", kMaxHeads);
  c.n_kv_heads = r.bounded("attention.head_count_kv", kMaxHeads).value_or(c.n_heads);
  c.head_dim = r.bounded("attention.key_length", kMaxDim).value_or(c.hidden / c.n_heads);
  c.ffn = r.require_int("feed_forward_length", kMaxDim);
  c.max_positions = r.bounded("context_length", kMaxPositions).value_or(2048);
  c.norm_eps =
      r.real(c.family == Family::gpt2 ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon")
          .value_or(c.family == Family::gpt2 ? 1e-5 : 1e-6);
  c.rope_theta = r.real("rope.freq_base").value_or(10000.0);
  if (const auto rot = r.bounded("rope.dimension_count", kMaxDim)) {
    c.partial_rotary = double(*rot) / c.head_dim;
    // llama.cpp rotates the first n_rot dims of its permuted Q/K rows in NORMAL order; un-permuted
    // that is no prefix of the HF head, so neither of the reference's RoPE layouts is that rotation.
    // Refused rather than read into a different model.
    if (c.family == Family::llama && *rot < c.head_dim)
      throw ModelError(
          fmt::format("{}: {} = {} < head dim {}: partial rotary in a llama GGUF is not supported "
                      "(llama.cpp rotates pairs of its permuted rows, which the reference does not "
                      "model)",
                      f.path(), r.full("rope.dimension_count"), *rot, c.head_dim));
  }
  if (const auto v = r.bounded("vocab_size", kMaxVocab)) c.vocab = *v;
  read_experts(f, r, c);
  if (const GgufValue* t = f.find(r.full("rope.scaling.type")); t && t->type == 8 && t->s != "none") {
    // Linear scaling divides positions by the factor: the same angles as every inv_freq divided
    // by it, which is how the rope op takes per-pair factors. llama3 scaling arrives as the
    // rope_freqs.weight tensor instead; anything else would be applied wrongly, so it is refused.
    if (t->s != "linear")
      throw ModelError(fmt::format("{}: {} = {} is not supported (none and linear are)", f.path(),
                                   r.full("rope.scaling.type"), t->s));
    const double factor = r.real("rope.scaling.factor").value_or(0);
    if (!(factor > 0))
      throw ModelError(fmt::format("{}: {} missing or not positive for linear rope scaling", f.path(),
                                   r.full("rope.scaling.factor")));
    c.rope_freq_factors.assign(std::size_t(c.rotary_dim() / 2), factor);
  }
  if (c.family == Family::llama)
    c.sliding_window = r.bounded("attention.sliding_window", kMaxPositions, 0).value_or(0);
  if (c.family == Family::llama && opt.llama_qk == LlamaQkLayout::keep_gguf) {
    c.rope_mode = RopeMode::normal;
    c.qk_rows_permuted = true;
  }
  if (is_gdn_hybrid(c.family)) {
    c.conv_kernel = r.require_int("ssm.conv_kernel", kMaxDim);
    c.gdn_k_dim = r.require_int("ssm.state_size", kMaxDim);
    c.gdn_k_heads = r.require_int("ssm.group_count", kMaxHeads);
    c.gdn_v_heads = r.require_int("ssm.time_step_rank", kMaxHeads);
    c.gdn_v_dim = r.require_int("ssm.inner_size", kMaxDim) / c.gdn_v_heads;
    c.full_attention_interval = r.bounded("full_attention_interval", kMaxLayers, 0).value_or(4);
    // llama.cpp's converter stores 1 + w for these norms: apply them plainly.
    c.norm_plus_one = false;
    check_rope_sections(f, r.full("rope.dimension_sections"));
    // qwen35 files carry the value heads tiled (llama.cpp's converter reorders them); files
    // labelled qwen3next (this project's writer before, llama.cpp's legacy fused layout) keep
    // the checkpoint's grouped order. driftscope.gdn_head_map, where present, says which.
    c.gdn_head_map = arch == "qwen35" ? GdnHeadMap::tiled : GdnHeadMap::grouped;
    if (const GgufValue* m = f.find("driftscope.gdn_head_map"); m && m->type == 8)
      c.gdn_head_map = m->s == "tiled" ? GdnHeadMap::tiled : GdnHeadMap::grouped;
  }
  if (opt.gdn_head_map) c.gdn_head_map = *opt.gdn_head_map;
  apply_family(c);
  return c;
}

// GGUF name -> canonical name; empty to skip the tensor.
std::string canonical_name(const ModelConfig& c, const std::string& name) {
  if (name == "pos_embd.weight") return "position_embd.weight";
  if (name == "rope_freqs.weight") return {};  // read into ModelConfig::rope_freq_factors
  if (is_gdn_hybrid(c.family)) {
    // llama.cpp's fused Qwen3-Next layout: split after loading (gdn_layout.h).
    for (const auto& [fused, role] : {std::pair{".ssm_in.weight", ".fused_qkvz.weight"},
                                      std::pair{".ssm_beta_alpha.weight", ".fused_ba.weight"}})
      if (auto at = name.find(fused); at != std::string::npos && at + std::strlen(fused) == name.size())
        return name.substr(0, at) + role;
    for (std::string_view post : {".post_attention_norm.", ".attn_post_norm."})
      if (auto at = name.find(post); at != std::string::npos)
        return name.substr(0, at) + ".ffn_norm." + name.substr(at + post.size());
  }
  return name;
}

// llama.cpp's fused Qwen3-Next tensors, split into the canonical ones. The fused layout holds
// the value heads grouped; in a file read with the tiled map the tensors split from it are
// brought to the order of the file's other GDN tensors.
void split_fused(Model& m, const std::string& path) {
  const auto split_roles = {"attn_qkv.weight", "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight"};
  std::vector<int> fused_layers;
  for (int l = 0; l < m.config.n_layers; ++l)
    if (m.weights.has(layer_weight(l, "fused_qkvz.weight")) ||
        m.weights.has(layer_weight(l, "fused_ba.weight")))
      fused_layers.push_back(l);
  split_fused_gdn(m, path);
  if (fused_layers.empty() || m.config.gdn_head_map == GdnHeadMap::grouped) return;
  WeightStore split;
  for (int l : fused_layers)
    for (const char* role : split_roles)
      if (const Tensor* t = m.weights.find(layer_weight(l, role))) split.put(layer_weight(l, role), *t);
  reorder_gdn_value_heads(split, m.config, GdnHeadMap::grouped, m.config.gdn_head_map);
  for (const auto& [name, t] : split.all()) m.weights.put(name, t);
}

// blk.N.* with N >= layers are skipped (a name whose N is not a number is kept, and reported by
// the completeness gate as unexpected rather than thrown on here).
bool beyond(const std::string& name, int layers) {
  if (name.rfind("blk.", 0) != 0) return false;
  long long n = 0;
  const char* first = name.data() + 4;
  const auto [end, ec] = std::from_chars(first, name.data() + name.size(), n);
  if (ec == std::errc::result_out_of_range) return true;
  return ec == std::errc() && end != first && n >= layers;
}

}  // namespace

ModelConfig gguf_config(const std::string& path, int layers, const LoadOptions& options) {
  const GgufFile f(path);
  ModelConfig c = read_config(f, options);
  truncate_layers(c, layers);
  bool has_output = false;
  for (const auto& t : f.tensors()) {
    has_output |= t.name == "output.weight";
    if (t.name == "token_embd.weight" && c.vocab == 0 && t.ne.size() == 2) {
      if (t.ne[1] > kMaxVocab)
        throw ModelError(
            fmt::format("{}: tensor token_embd.weight: {} rows is more than the {} a vocabulary "
                        "may hold",
                        path, t.ne[1], kMaxVocab));
      c.vocab = int(t.ne[1]);
    }
  }
  c.tied_embeddings = !has_output;
  return c;
}

Model load_gguf(const std::string& path, int layers, const LoadOptions& options) {
  const GgufFile f(path);
  Model m;
  m.config = read_config(f, options);
  truncate_layers(m.config, layers);
  for (const auto& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") {
      if (!m.config.rope_freq_factors.empty())
        throw ModelError(
            fmt::format("{}: both linear rope scaling and a rope_freqs.weight tensor: which applies?", path));
      const Tensor r = f.read(t);
      for (std::int64_t i = 0; i < r.numel(); ++i) m.config.rope_freq_factors.push_back(r.at(i));
      continue;
    }
    if (beyond(t.name, m.config.n_layers)) continue;
    const std::string name = canonical_name(m.config, t.name);
    if (name.empty()) continue;
    f.put_stored(t, name, m.weights);
    if (const auto info = ggml_type_info(t.type)) m.file_types[name] = std::string(info->name);
  }
  if (is_gdn_hybrid(m.config.family)) split_fused(m, path);
  // llama.cpp's qwen3next shared-expert gate is a vector {n_embd}: the reference's is a linear of
  // one output, [1, hidden].
  for (int l = 0; l < m.config.n_layers; ++l) {
    const std::string gate = layer_weight(l, "ffn_gate_inp_shexp.weight");
    if (const auto shape = m.weights.shape_of(gate); shape && shape->size() == 1)
      m.weights.put(gate, m.weights.get(gate).reshaped({1, (*shape)[0]}));
  }
  auto& c = m.config;
  if (const auto e = m.weights.shape_of("token_embd.weight")) {
    const std::int64_t rows = e->empty() ? 0 : e->front();
    if (c.vocab == 0 && rows > kMaxVocab)
      throw ModelError(
          fmt::format("{}: tensor token_embd.weight: {} rows is more than the {} a vocabulary may hold", path,
                      rows, kMaxVocab));
    if (c.vocab == 0) c.vocab = int(rows);
  } else if (c.vocab == 0) {
    throw ModelError(fmt::format("{}: no {}.vocab_size and no token_embd.weight", path, c.arch));
  }
  c.tied_embeddings = !m.weights.has("output.weight");
  if (c.family == Family::llama && options.llama_qk == LlamaQkLayout::unpermute)
    for (int l = 0; l < c.n_layers; ++l) {
      unpermute_qk(m.weights, layer_weight(l, "attn_q.weight"), c.n_heads);
      unpermute_qk(m.weights, layer_weight(l, "attn_q.bias"), c.n_heads);
      unpermute_qk(m.weights, layer_weight(l, "attn_k.weight"), c.n_kv_heads);
      unpermute_qk(m.weights, layer_weight(l, "attn_k.bias"), c.n_kv_heads);
    }
  return m;
}

}  // namespace ds::ref
