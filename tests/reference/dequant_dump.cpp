// dequant_dump FILE.gguf OUT_DIR: every tensor of FILE as Driftscope's GGUF reader decodes it,
// raw little-endian f32 in PyTorch order (ne reversed), one OUT_DIR/<tensor name>.f32 each, and
// OUT_DIR/types.txt ("<name> <ggml type name>" per line). test_dequant_gguf_py.py compares them
// with gguf-py's dequantisation.
#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <fstream>

#include "gguf.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: dequant_dump FILE.gguf OUT_DIR\n");
    return 2;
  }
  try {
    const ds::ref::GgufFile file(argv[1]);
    const std::filesystem::path out(argv[2]);
    std::filesystem::create_directories(out);
    std::ofstream types(out / "types.txt");
    for (const auto& t : file.tensors()) {
      const auto info = ds::ref::ggml_type_info(t.type);
      types << t.name << ' ' << (info ? info->name : std::string_view("unknown")) << '\n';
      const ds::Tensor x = file.read(t);
      std::ofstream f(out / (t.name + ".f32"), std::ios::binary);
      f.write(reinterpret_cast<const char*>(x.data<float>()), std::streamsize(x.numel() * 4));
      if (!f) throw std::runtime_error(fmt::format("{}: cannot write", (out / t.name).string()));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "dequant_dump: {}\n", e.what());
    return 1;
  }
  return 0;
}
