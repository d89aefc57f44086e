// NumPy .npy: magic "\x93NUMPY", version, a little-endian header length (u16 in v1, u32 in v2/3),
// a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and the data.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "npy_parse.h"
#include "tensor_files.h"

namespace ds::dump {

namespace {

// Dumps are activations, not corpora: a header past this is garbage, not a tensor.
constexpr std::size_t kMaxHeader = kNpyHeadBytes - 12;
constexpr std::size_t kMaxRank = 8;

struct Descr {
  DType dtype = DType::f32;
  std::size_t size = 4;
  bool i64 = false;
};

class DictParser {
 public:
  DictParser(std::string_view s, const std::string& where) : s_(s), where_(where) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      skip();
      if (key == "descr") {
        h.descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = word();
        seen_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        seen_shape = true;
      } else {
        fail(fmt::format("unknown key '{}'", key));
      }
      skip();
      if (peek() == ',') ++at_;
    }
    if (!seen_descr || !seen_order || !seen_shape)
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw DumpError(fmt::format("{}: not a valid .npy header: {}", where_, why));
  }
  void skip() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\n')) ++at_;
  }
  char peek() const {
    if (at_ >= s_.size()) fail("it ends early");
    return s_[at_];
  }
  void expect(char c) {
    skip();
    if (peek() != c) fail(fmt::format("expected '{}' at offset {}", c, at_));
    ++at_;
  }
  std::string quoted() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') fail(fmt::format("expected a quoted string at offset {}", at_));
    const std::size_t end = s_.find(q, at_ + 1);
    if (end == std::string_view::npos) fail("an unterminated string");
    std::string out(s_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return out;
  }
  bool word() {
    if (s_.substr(at_, 4) == "True") {
      at_ += 4;
      return true;
    }
    if (s_.substr(at_, 5) == "False") {
      at_ += 5;
      return false;
    }
    fail("fortran_order is neither True nor False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skip();
      if (peek() == ')') break;
      std::int64_t v = 0;
      std::size_t digits = 0;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') {
        if (++digits > 15) fail("a dimension larger than 10^15");
        v = v * 10 + (s_[at_++] - '0');
      }
      if (digits == 0) fail(fmt::format("expected a dimension at offset {}", at_));
      if (shape.size() == kMaxRank) fail(fmt::format("more than {} dimensions", kMaxRank));
      shape.push_back(v);
      skip();
      if (peek() == ',') ++at_;
    }
    ++at_;
    return shape;
  }

  std::string_view s_;
  const std::string& where_;
  std::size_t at_ = 0;
};

Descr parse_descr(const std::string& d, const std::string& where) {
  if (d.size() == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '=')) {
    const std::string_view t(d.data() + 1, 2);
    if (t == "f8") return {DType::f64, 8, false};
    if (t == "f4") return {DType::f32, 4, false};
    if (t == "f2") return {DType::f16, 2, false};
    if (t == "i4") return {DType::i32, 4, false};
    if (t == "i8") return {DType::i32, 8, true};
  }
  throw DumpError(fmt::format(
      "{}: dtype '{}' is not supported (little-endian f8, f4, f2, i4 or i8; save bf16 as f32 or in "
      "safetensors)",
      where, d));
}

// Column-major data (fortran_order) into row-major: the axes in reverse are a row-major layout.
Tensor from_fortran(const Tensor& t) {
  const Shape& s = t.shape();
  const Shape reversed(s.rbegin(), s.rend());
  const Shape reversed_strides = row_major_strides(reversed);
  return Tensor::from_view(
      TensorView(t.raw(), t.dtype(), s, Shape(reversed_strides.rbegin(), reversed_strides.rend())),
      t.dtype());
}

}  // namespace

NpyHeader parse_npy_header(const std::vector<unsigned char>& b, const std::string& where) {
  static constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0)
    throw DumpError(fmt::format("{}: not a .npy file (no \\x93NUMPY magic)", where));
  const int major = b[6];
  std::size_t len = 0, start = 0;
  if (major == 1) {
    len = std::size_t(b[8]) | std::size_t(b[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) throw DumpError(fmt::format("{}: the .npy header is truncated", where));
    len = std::size_t(b[8]) | std::size_t(b[9]) << 8 | std::size_t(b[10]) << 16 | std::size_t(b[11]) << 24;
    start = 12;
  } else {
    throw DumpError(fmt::format("{}: .npy format version {} is not supported (1, 2, 3)", where, major));
  }
  if (len > kMaxHeader || len > b.size() - start)
    throw DumpError(fmt::format("{}: the .npy header claims {} bytes; the file holds {} after it", where, len,
                                b.size() - start));
  const std::string text(reinterpret_cast<const char*>(b.data() + start), len);
  NpyHeader h = DictParser(text, where).parse();
  h.data_offset = start + len;
  return h;
}

Tensor parse_npy(const std::vector<unsigned char>& b, const std::string& where, bool header_only,
                 Shape* shape_out, std::uint64_t image_bytes) {
  const NpyHeader h = parse_npy_header(b, where);
  const Descr d = parse_descr(h.descr, where);
  std::uint64_t n = 1;
  for (std::int64_t dim : h.shape) {
    if (dim != 0 && n > std::numeric_limits<std::uint64_t>::max() / 16 / std::uint64_t(dim))
      throw DumpError(fmt::format("{}: shape {} overflows", where, shape_str(h.shape)));
    n *= std::uint64_t(dim);
  }
  const std::uint64_t need = n * d.size, have = image_bytes - h.data_offset;
  if (shape_out) *shape_out = h.shape;
  if (need != have)
    throw DumpError(fmt::format("{}: shape {} of {} needs {} data bytes; the file holds {}", where,
                                shape_str(h.shape), h.descr, need, have));
  if (header_only) return {};
  Tensor t(d.dtype, h.shape);
  const unsigned char* src = b.data() + h.data_offset;
  if (d.i64) {
    for (std::uint64_t i = 0; i < n; ++i) {
      std::int64_t v;
      std::memcpy(&v, src + i * 8, 8);
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        throw DumpError(fmt::format("{}: element {} = {} does not fit in 32 bits", where, i, v));
      t.data<std::int32_t>()[i] = std::int32_t(v);
    }
  } else if (n) {
    std::memcpy(t.raw(), src, std::size_t(need));
  }
  return h.fortran && t.rank() > 1 ? from_fortran(t) : t;
}

namespace {
class NpyFile final : public TensorFile {
 public:
  explicit NpyFile(const std::string& path) : TensorFile(path) {
    // The header is within the first kNpyHeadBytes; read only that to list it.
    const std::uint64_t size = file_size(path);
    auto head = read_file_range(path, 0, std::min(size, kNpyHeadBytes));
    Shape s;
    (void)parse_npy(head, path, true, &s, size);
    shape_ = s;
  }
  std::vector<std::string> names() const override { return {""}; }
  bool has(std::string_view name) const override { return name.empty(); }
  Shape shape(std::string_view) const override { return shape_; }
  Tensor read(std::string_view) const override {
    const auto bytes = read_file_range(path_, 0, file_size(path_));
    return parse_npy(bytes, path_, false, nullptr, bytes.size());
  }

 private:
  Shape shape_;
};
}  // namespace

std::unique_ptr<TensorFile> open_npy(const std::string& path) { return std::make_unique<NpyFile>(path); }

void write_npy(const std::string& path, const Tensor& in) {
  const Tensor t = in.dtype() == DType::bf16 ? in.to(DType::f32) : in;
  const char* descr = t.dtype() == DType::f64   ? "<f8"
                      : t.dtype() == DType::f32 ? "<f4"
                      : t.dtype() == DType::f16 ? "<f2"
                                                : "<i4";
  std::string dims;
  for (std::int64_t d : t.shape()) dims += fmt::format("{}, ", d);
  if (t.rank() > 1) dims.resize(dims.size() - 1);  // (3,) but (3, 4)
  if (t.rank() > 1) dims.pop_back();
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Data starts on a 64-byte boundary, as NumPy writes it; the header ends with '\n'.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<unsigned char>(header.size() & 0xff));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const auto* raw = reinterpret_cast<const unsigned char*>(t.raw());
  out.insert(out.end(), raw, raw + t.nbytes());
  write_file(path, out);
}

}  // namespace ds::dump
