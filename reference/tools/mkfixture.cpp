// driftscope-mkfixture: writes synthetic models as real weight files, so tests and users can
// load GGUF and safetensors without downloading a checkpoint.
//
//   driftscope-mkfixture [--out DIR] [--seed N] [--gguf-type f32|f16|bf16|q8_0|q4_k_m] [--suffix S]
//                        [--gguf-only] PRESET...
//
// For each preset P: DIR/P<S>.gguf and (unless --gguf-only) DIR/P<S>/{config.json, model.safetensors}.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "loaders/gguf.h"
#include "loaders/hf.h"
#include "synthetic.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::string out = "fixtures/models", suffix;
  bool gguf_only = false;
  std::uint64_t seed = 1;
  ds::ref::GgufWriteOptions gguf;
  std::vector<std::string> presets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "driftscope-mkfixture: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out") {
      out = value();
    } else if (a == "--seed") {
      seed = std::stoull(value());
    } else if (a == "--gguf-only") {
      gguf_only = true;
    } else if (a == "--suffix") {
      suffix = value();
    } else if (a == "--gguf-type") {
      const std::string t = value();
      if (t == "f32")
        gguf.matrix_type = ds::ref::GgmlType::F32;
      else if (t == "f16")
        gguf.matrix_type = ds::ref::GgmlType::F16;
      else if (t == "bf16")
        gguf.matrix_type = ds::ref::GgmlType::BF16;
      else if (t == "q8_0")
        gguf.matrix_type = ds::ref::GgmlType::Q8_0;
      else if (t == "q4_k_m")  // llama.cpp's mix: Q4_K, Q6_K where it puts them (gguf_writer.cpp)
        gguf.mix = ds::ref::GgufMix::q4_k_m;
      else {
        fmt::print(stderr, "driftscope-mkfixture: unknown --gguf-type {}\n", t);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      fmt::print(
          "usage: driftscope-mkfixture [--out DIR] [--seed N] [--gguf-type f32|f16|bf16|q8_0|q4_k_m] "
          "[--suffix S] [--gguf-only] PRESET...\n"
          "presets: {}\n",
          fmt::join(ds::ref::synthetic_presets(), ", "));
      return 0;
    } else {
      presets.push_back(a);
    }
  }
  if (presets.empty()) presets = {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gpt2-tiny", "qwen35-tiny"};
  try {
    fs::create_directories(out);
    for (const auto& p : presets) {
      const ds::Model m = ds::ref::make_synthetic(p, seed);
      const std::string gguf_path = (fs::path(out) / (p + suffix + ".gguf")).string();
      ds::ref::write_gguf(m, gguf_path, gguf);
      if (gguf_only) {
        fmt::print("{}: {}\n", p, gguf_path);
        continue;
      }
      const std::string hf_dir = (fs::path(out) / (p + suffix)).string();
      ds::ref::write_hf(m, hf_dir);
      fmt::print("{}: {} and {}/\n", p, gguf_path, hf_dir);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "driftscope-mkfixture: {}\n", e.what());
    return 1;
  }
  return 0;
}
