// The tensor files of `dump:DIR` are untrusted: every malformed header is a DumpError naming the
// file, never a read outside it (run under the asan preset to see the latter), and what the
// writers write reads back bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dump/tensor_files.h"

namespace ds::dump {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "ds-test-dump-files";
  fs::create_directories(dir);
  return (dir / name).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string u64le(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[std::size_t(i)] = char(v >> (8 * i));
  return s;
}

std::string npy(const std::string& dict, std::size_t data_bytes) {
  std::string h = dict + "\n";
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + std::string(data_bytes, '\0');
}

std::string st(const std::string& header, std::size_t data_bytes) {
  return u64le(header.size()) + header + std::string(data_bytes, '\0');
}

// The end-of-central-directory record of a zip whose directory is `entries` long at `offset`.
std::string eocd(std::uint16_t entries, std::uint32_t size, std::uint32_t offset) {
  std::string s = std::string("PK\x05\x06", 4) + std::string(4, '\0');
  for (std::uint16_t v : {entries, entries}) s += std::string{char(v & 0xff), char(v >> 8)};
  for (std::uint32_t v : {size, offset})
    for (int i = 0; i < 4; ++i) s += char(v >> (8 * i));
  return s + std::string(2, '\0');
}

// A central directory entry for member "a.npy" with the given method, sizes and local offset.
std::string central(std::uint16_t method, std::uint32_t comp, std::uint32_t size, std::uint32_t local) {
  std::string s = std::string("PK\x01\x02", 4) + std::string(6, '\0');
  s += std::string{char(method & 0xff), char(method >> 8)};
  s += std::string(8, '\0');  // time, date, crc
  for (std::uint32_t v : {comp, size})
    for (int i = 0; i < 4; ++i) s += char(v >> (8 * i));
  s += std::string{5, 0, 0, 0, 0, 0};  // name length 5, extra 0, comment 0
  s += std::string(8, '\0');           // disk, attributes
  for (int i = 0; i < 4; ++i) s += char(local >> (8 * i));
  return s + "a.npy";
}

struct BadFile {
  const char* name;
  const char* ext;
  std::string bytes;
  const char* says;  // part of the message, besides the file's path
};

void PrintTo(const BadFile& c, std::ostream* os) { *os << c.name; }

class MalformedTensorFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(MalformedTensorFile, IsADumpErrorNamingTheFile) {
  const BadFile& c = GetParam();
  std::string name = c.name;
  for (char& ch : name)
    if (ch == ' ') ch = '-';
  const std::string path = temp_path(name + c.ext);
  write_bytes(path, c.bytes);
  try {
    const auto f = TensorFile::open(path);
    for (const std::string& n : f->names()) {
      (void)f->shape(n);
      (void)f->read(n);
    }
    FAIL() << "no error for " << c.name;
  } catch (const DumpError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
}

const std::string kDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

INSTANTIATE_TEST_SUITE_P(
    DumpFiles, MalformedTensorFile,
    ::testing::Values(
        BadFile{"npy empty", ".npy", "", "magic"},
        BadFile{"npy wrong magic", ".npy", "NOTNUMPY-at-all", "magic"},
        BadFile{"npy header past the end", ".npy", std::string("\x93NUMPY\x01\x00\xff\x7f{", 11), "header"},
        BadFile{"npy v2 header truncated", ".npy", std::string("\x93NUMPY\x02\x00\xff\xff", 10), "header"},
        BadFile{"npy unknown version", ".npy", std::string("\x93NUMPY\x07\x00\x00\x00", 10), "version 7"},
        BadFile{"npy header not a dict", ".npy", npy("garbage", 0), "not a valid .npy header"},
        BadFile{"npy unterminated string", ".npy", npy("{'descr", 0), "unterminated"},
        BadFile{"npy missing shape", ".npy", npy("{'descr': '<f4', 'fortran_order': False}", 0), "lacks"},
        BadFile{"npy unknown key", ".npy", npy("{'descr': '<f4', 'extra': 1}", 0), "unknown key"},
        BadFile{"npy too many dims", ".npy",
                npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 0),
                "dimensions"},
        BadFile{
            "npy shape overflows", ".npy",
            npy("{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999999, 999999999999999), }", 0),
            "overflow"},
        BadFile{"npy data truncated", ".npy", npy(kDict, 23), "data bytes"},
        BadFile{"npy big endian", ".npy",
                npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24), ">f4"},
        BadFile{"npy object dtype", ".npy",
                npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8), "|O"},
        BadFile{"npz empty", ".npz", "", "not a valid .npz"},
        BadFile{"npz without an end record", ".npz", std::string(100, 'x'), "end-of-central-directory"},
        BadFile{"npz directory past the file", ".npz", eocd(1, 46, 1000000), "past the end"},
        BadFile{"npz entry truncated", ".npz", std::string(10, 'x') + eocd(1, 10, 0),
                "truncated or malformed"},
        BadFile{"npz local header past the file", ".npz", central(0, 10, 10, 999999) + eocd(1, 51, 0),
                "past the end"},
        BadFile{"npz unknown compression", ".npz",
                std::string("PK\x03\x04", 4) + std::string(26, '\0') + central(12, 0, 0, 0) + eocd(1, 51, 30),
                "method 12"},
        BadFile{"npz stored member with two sizes", ".npz",
                std::string("PK\x03\x04", 4) + std::string(26, '\0') + central(0, 4, 8, 0) + eocd(1, 51, 30),
                "two sizes"},
        BadFile{"npz deflated member that does not inflate", ".npz",
                std::string("PK\x03\x04", 4) + std::string(26, '\0') + "garbage!" + central(8, 8, 100, 0) +
                    eocd(1, 51, 38),
                "inflate"},
        BadFile{"safetensors shorter than its length", ".safetensors", "abc", "8-byte"},
        BadFile{"safetensors header length huge", ".safetensors", u64le(std::uint64_t(1) << 62) + "{}",
                "header length"},
        BadFile{"safetensors header not JSON", ".safetensors", st("{nope", 0), "not JSON"},
        BadFile{"safetensors header not an object", ".safetensors", st("[1, 2]", 0), "not a JSON object"},
        BadFile{"safetensors tensor without dtype", ".safetensors", st(R"({"t": {"shape": [1]}})", 4),
                "'dtype'"},
        BadFile{"safetensors unknown dtype", ".safetensors",
                st(R"({"t": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", 8), "C64"},
        BadFile{"safetensors negative dimension", ".safetensors",
                st(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4), "shape"},
        BadFile{"safetensors offsets past the data", ".safetensors",
                st(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8), "data_offsets"},
        BadFile{"safetensors offsets reversed", ".safetensors",
                st(R"({"t": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 8), "data_offsets"},
        BadFile{"safetensors size disagrees with shape", ".safetensors",
                st(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8), "needs 12 bytes"},
        BadFile{"unknown extension", ".bin", "x", "unknown tensor file type"}));

TEST(DumpFiles, AMissingFileIsNamed) {
  const std::string path = temp_path("does-not-exist.npy");
  fs::remove(path);
  try {
    (void)TensorFile::open(path);
    FAIL();
  } catch (const DumpError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": no such file"), std::string::npos) << e.what();
  }
}

Tensor sample(DType t) {
  Tensor x(t, {2, 3});
  for (int i = 0; i < 6; ++i) x.set(i, t == DType::i32 ? i * 7 - 3 : 0.1 * i - 0.25);
  return x;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(DumpFiles, NpyWrittenReadsBackBitForBit) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::i32}) {
    const std::string path = temp_path(std::string("roundtrip-") + std::string(dtype_name(t)) + ".npy");
    write_npy(path, sample(t));
    const auto f = TensorFile::open(path);
    EXPECT_TRUE(same_bytes(f->read(""), sample(t))) << dtype_name(t);
  }
}

TEST(DumpFiles, SafetensorsWrittenReadsBackBitForBit) {
  const std::string path = temp_path("roundtrip.safetensors");
  std::vector<std::pair<std::string, Tensor>> all;
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32})
    all.emplace_back(std::string(dtype_name(t)), sample(t));
  write_safetensors(path, all);
  const auto f = TensorFile::open(path);
  for (const auto& [name, t] : all) EXPECT_TRUE(same_bytes(f->read(name), t)) << name;
}

TEST(DumpFiles, FortranOrderNpyIsReadRowMajor) {
  // Column-major [2, 3] holding 0..5: row-major it is [[0, 2, 4], [1, 3, 5]].
  std::string bytes = npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 0);
  for (int i = 0; i < 6; ++i) {
    const float v = float(i);
    bytes.append(reinterpret_cast<const char*>(&v), 4);
  }
  const std::string path = temp_path("fortran.npy");
  write_bytes(path, bytes);
  const Tensor t = TensorFile::open(path)->read("");
  const double want[] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.at(i), want[i]) << i;
}

}  // namespace
}  // namespace ds::dump
