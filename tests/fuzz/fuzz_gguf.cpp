// libFuzzer target: the GGUF reader, as `driftscope run --model FILE.gguf` and `gate` use it.
// Every input must end in a model or a ModelError; any other exception, a signal or a sanitizer
// report is a bug in the reader.
#include <cstddef>
#include <cstdint>

#include "fuzz_files.h"
#include "fuzz_loaded.h"
#include "gguf.h"
#include "load_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = ds::fuzz::write_scratch("input.gguf", ds::fuzz::as_text(data, size));
  try {
    // The raw reader first: every tensor, including those the model loader skips.
    const ds::ref::GgufFile file(path);
    for (const auto& t : file.tensors()) {
      try {
        (void)file.read(t);
      } catch (const ds::ref::ModelError& e) {
        ds::fuzz::record_error(e);
      }
    }
  } catch (const ds::ref::ModelError& e) {
    ds::fuzz::record_error(e);
    return 0;
  }
  ds::fuzz::load_both(path);
  return 0;
}
