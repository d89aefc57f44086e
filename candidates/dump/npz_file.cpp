// NumPy .npz: a zip archive of .npy members (np.savez stores them, np.savez_compressed deflates
// them). Only the central directory is trusted for sizes and offsets, and only after checking
// them against the file; deflated members are inflated with zlib up to their declared size.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "npy_parse.h"
#include "tensor_files.h"

namespace ds::dump {

namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50, kZip64LocSig = 0x07064b50, kZip64EocdSig = 0x06064b50,
                        kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr std::size_t kMaxEntries = 1 << 20;
// One member is one activation tensor; past this it is a corrupt size, not a tensor.
constexpr std::uint64_t kMaxMember = std::uint64_t(1) << 36;

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

struct Member {
  std::uint16_t method = 0;
  std::uint64_t comp = 0, size = 0, local = 0;
};

class NpzFile final : public TensorFile {
 public:
  explicit NpzFile(const std::string& path) : TensorFile(path) {
    const std::uint64_t fsize = file_size(path);
    const std::uint64_t tail_n = std::min<std::uint64_t>(fsize, 22 + 65535);
    const auto tail = read_file_range(path, fsize - tail_n, tail_n);
    if (tail.size() < 22) bad("too short for a zip archive");
    std::size_t e = tail.size() - 22;
    while (true) {
      if (le(&tail[e], 4) == kEocdSig) break;
      if (e == 0) bad("no end-of-central-directory record (not a zip archive)");
      --e;
    }
    std::uint64_t entries = le(&tail[e + 10], 2), cd_size = le(&tail[e + 12], 4),
                  cd_off = le(&tail[e + 16], 4);
    if (entries == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) {
      // zip64: the locator sits just before the end record and points at the zip64 end record.
      if (e < 20 || le(&tail[e - 20], 4) != kZip64LocSig) bad("a zip64 archive without its locator");
      const std::uint64_t rec = le(&tail[e - 20 + 8], 8);
      const auto z = read_file_range(path, rec, 56);
      if (le(z.data(), 4) != kZip64EocdSig) bad("the zip64 end record is missing");
      entries = le(&z[32], 8);
      cd_size = le(&z[40], 8);
      cd_off = le(&z[48], 8);
    }
    if (entries > kMaxEntries) bad(fmt::format("{} members claimed", entries));
    const auto cd = read_file_range(path, cd_off, cd_size);
    std::size_t at = 0;
    for (std::uint64_t i = 0; i < entries; ++i) {
      if (cd.size() - at < 46 || le(&cd[at], 4) != kCentralSig)
        bad(fmt::format("central directory entry {} is truncated or malformed", i));
      const unsigned char* h = &cd[at];
      const std::uint64_t flags = le(h + 8, 2), name_n = le(h + 28, 2), extra_n = le(h + 30, 2),
                          comment_n = le(h + 32, 2);
      if (cd.size() - at - 46 < name_n + extra_n + comment_n)
        bad(fmt::format("central directory entry {} runs past the directory", i));
      Member m;
      m.method = std::uint16_t(le(h + 10, 2));
      m.comp = le(h + 20, 4);
      m.size = le(h + 24, 4);
      m.local = le(h + 42, 4);
      std::string name(reinterpret_cast<const char*>(h + 46), name_n);
      read_zip64_extra(h + 46 + name_n, extra_n, m, name);
      if (flags & 1) bad(fmt::format("member '{}' is encrypted", name));
      at += 46 + name_n + extra_n + comment_n;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
      members_[name] = m;
    }
  }

  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [n, m] : members_) out.push_back(n);
    return out;
  }
  bool has(std::string_view name) const override { return members_.count(std::string(name)) != 0; }
  Shape shape(std::string_view name) const override {
    Shape s;
    const auto head = member_bytes(name, true);
    (void)parse_npy(head, where(name), true, &s, members_.find(name)->second.size);
    return s;
  }
  Tensor read(std::string_view name) const override {
    const auto bytes = member_bytes(name, false);
    return parse_npy(bytes, where(name), false, nullptr, bytes.size());
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    throw DumpError(fmt::format("{}: not a valid .npz archive: {}", path_, why));
  }
  std::string where(std::string_view name) const { return fmt::format("{} (member '{}')", path_, name); }

  void read_zip64_extra(const unsigned char* p, std::uint64_t n, Member& m, const std::string& name) const {
    std::uint64_t at = 0;
    while (n - at >= 4) {
      const std::uint64_t id = le(p + at, 2), len = le(p + at + 2, 2);
      if (len > n - at - 4) bad(fmt::format("member '{}' has a truncated extra field", name));
      if (id == 1) {
        std::uint64_t k = at + 4;
        auto take = [&](std::uint64_t& field) {
          if (field != 0xffffffff) return;
          if (k + 8 > at + 4 + len) bad(fmt::format("member '{}' has a short zip64 field", name));
          field = le(p + k, 8);
          k += 8;
        };
        take(m.size);
        take(m.comp);
        take(m.local);
      }
      at += 4 + len;
    }
  }

  // The member's bytes, inflated; with `head`, only enough for its .npy header.
  std::vector<unsigned char> member_bytes(std::string_view name, bool head) const {
    auto it = members_.find(std::string(name));
    if (it == members_.end()) throw DumpError(fmt::format("{}: no member '{}'", path_, name));
    const Member& m = it->second;
    if (m.size > kMaxMember || m.comp > kMaxMember)
      bad(fmt::format("member '{}' claims {} bytes", name, std::max(m.size, m.comp)));
    const auto local = read_file_range(path_, m.local, 30);
    if (le(local.data(), 4) != kLocalSig) bad(fmt::format("member '{}' has no local header", name));
    const std::uint64_t start = m.local + 30 + le(&local[26], 2) + le(&local[28], 2);
    if (m.method == 0) {
      if (m.comp != m.size) bad(fmt::format("stored member '{}' has two sizes", name));
      return read_file_range(path_, start, head ? std::min(m.size, kNpyHeadBytes) : m.size);
    }
    if (m.method != 8)
      throw DumpError(
          fmt::format("{}: member '{}' is compressed with zip method {}; only stored (np.savez) and deflated "
                      "(np.savez_compressed) members are read",
                      path_, name, m.method));
    if (!head) return inflate(read_file_range(path_, start, m.comp), m.size, m.size, name);
    // Deflate expands incompressible data by a few bytes per 16 KiB block, so twice the header
    // size of compressed input always holds the header.
    const std::uint64_t want = std::min(m.size, kNpyHeadBytes);
    return inflate(read_file_range(path_, start, std::min(m.comp, 2 * want + 4096)), m.size, want, name);
  }

  // The first `want` of the member's `size` inflated bytes (all of them when want == size, and
  // then the stream must end exactly there).
  std::vector<unsigned char> inflate(std::vector<unsigned char> in, std::uint64_t size, std::uint64_t want,
                                     std::string_view name) const {
    std::vector<unsigned char> out(static_cast<std::size_t>(want));
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) bad("zlib could not start");
    std::uint64_t in_at = 0, out_at = 0;
    int rc = Z_OK;
    // zlib counts in uInt: feed and drain in chunks so members past 4 GiB work too.
    constexpr std::uint64_t kChunk = 1u << 30;
    while (rc == Z_OK) {
      z.next_in = in.data() + in_at;
      z.avail_in = uInt(std::min(kChunk, in.size() - in_at));
      z.next_out = out.data() + out_at;
      z.avail_out = uInt(std::min(kChunk, want - out_at));
      const uInt in0 = z.avail_in, out0 = z.avail_out;
      rc = ::inflate(&z, Z_NO_FLUSH);
      in_at += in0 - z.avail_in;
      out_at += out0 - z.avail_out;
      if (out_at == want && want < size) break;
      if (rc == Z_BUF_ERROR && (in_at == in.size() || out_at == want)) break;
      if (rc == Z_OK && in0 == z.avail_in && out0 == z.avail_out) break;
    }
    inflateEnd(&z);
    if (want < size ? out_at != want : rc != Z_STREAM_END || out_at != size)
      bad(fmt::format("member '{}' does not inflate to its declared {} bytes", name, size));
    return out;
  }

  std::map<std::string, Member, std::less<>> members_;
};

}  // namespace

std::unique_ptr<TensorFile> open_npz(const std::string& path) { return std::make_unique<NpzFile>(path); }

}  // namespace ds::dump
