// libFuzzer target: a Hugging Face directory (config.json + model.safetensors), as `driftscope run
// --model DIR` loads it. One input holds both files: the config.json text, then kSeparator, then
// the safetensors bytes (tests/fuzz/make_seeds.sh packs the fixtures so); without the separator
// the whole input is config.json and the safetensors file is empty.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_files.h"
#include "fuzz_loaded.h"

namespace {
constexpr std::string_view kSeparator = "\n--driftscope-fuzz-safetensors--\n";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = ds::fuzz::as_text(data, size);
  const std::size_t at = input.find(kSeparator);
  const std::string_view config = input.substr(0, at);
  const std::string_view tensors =
      at == std::string_view::npos ? std::string_view() : input.substr(at + kSeparator.size());
  ds::fuzz::write_scratch("config.json", config);
  ds::fuzz::write_scratch("model.safetensors", tensors);
  ds::fuzz::load_both(ds::fuzz::scratch_dir());
  return 0;
}
