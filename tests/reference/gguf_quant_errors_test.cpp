// Quantized tensors the reader cannot decode are refused with a message naming the file and the
// tensor: an unknown type code, data shorter than the type's blocks need, a row that is not a
// whole number of blocks.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "gguf.h"
#include "model_error.h"

namespace ds::ref {
namespace {

namespace fs = std::filesystem;

constexpr char kTensor[] = "blk.0.attn_q.weight";

// A GGUF v3 file with no metadata and one 2-D tensor of `type`, followed by `data_bytes` zero
// bytes of data.
void write_one_tensor(const fs::path& path, std::uint32_t type, std::uint64_t ne0, std::uint64_t ne1,
                      std::size_t data_bytes) {
  std::string b;
  auto put = [&b](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  b += "GGUF";
  put(std::uint32_t(3));
  put(std::uint64_t(1));  // tensors
  put(std::uint64_t(0));  // metadata pairs
  put(std::uint64_t(std::strlen(kTensor)));
  b += kTensor;
  put(std::uint32_t(2));
  put(ne0);
  put(ne1);
  put(type);
  put(std::uint64_t(0));                // offset into the data section
  b.resize((b.size() + 31) / 32 * 32);  // the default alignment
  b.resize(b.size() + data_bytes);
  std::ofstream(path, std::ios::binary) << b;
}

struct BadTensor {
  const char* name;
  std::uint32_t type;
  std::uint64_t ne0, ne1;
  std::size_t data_bytes;
  const char* says;  // besides the file and the tensor
};

void PrintTo(const BadTensor& c, std::ostream* os) { *os << c.name; }

const BadTensor kBad[] = {
    // IQ2_XXS decodes through a lookup grid the reader does not carry; the refusal lists the rest.
    {"UnknownTypeCode", 16, 256, 1, 66, "ggml type 16 is not supported (F32, F16, BF16, Q8_0, Q4_0"},
    {"UnknownTypeCodeBeyondGgml", 99, 32, 1, 4, "ggml type 99 is not supported"},
    // Two rows of two Q4_0 blocks are 4 * 18 = 72 bytes.
    {"ShortQ4_0Tensor", 2, 64, 2, 50, "offset 0 and 72 bytes of data lie beyond the data section (50 bytes"},
    {"ShortIQ4_XSTensor", 23, 256, 1, 135, "136 bytes of data lie beyond the data section (135 bytes"},
    {"ShortQ3_KTensor", 11, 512, 1, 219, "220 bytes of data lie beyond"},
    {"RowNotWholeQ5_KBlocks", 13, 128, 1, 176, "row of 128 elements is not a whole number of Q5_K blocks"},
    {"RowNotWholeQ5_0Blocks", 6, 48, 1, 44, "row of 48 elements is not a whole number of Q5_0 blocks"},
};

class GgufQuantRefusal : public ::testing::TestWithParam<BadTensor> {};

TEST_P(GgufQuantRefusal, NamesFileAndTensor) {
  const BadTensor& c = GetParam();
  const fs::path dir = fs::temp_directory_path() / fmt::format("driftscope-quant-{}-{}", ::getpid(), c.name);
  fs::create_directories(dir);
  const fs::path path = dir / "bad.gguf";
  write_one_tensor(path, c.type, c.ne0, c.ne1, c.data_bytes);
  try {
    const GgufFile f(path.string());
    for (const auto& t : f.tensors()) f.read(t);
    ADD_FAILURE() << "accepted";
  } catch (const ModelError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(kTensor), std::string::npos) << what;
    EXPECT_NE(what.find(c.says), std::string::npos) << what;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Quantized, GgufQuantRefusal, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ds::ref
