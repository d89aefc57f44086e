// The fuzz targets as plain programs, for builds without libFuzzer (the g++ build, ctest): feeds
// every file named on the command line, and every file under every directory named, through
// LLVMFuzzerTestOneInput once. A crash, a sanitizer report or an exception the target does not
// expect ends the program abnormally, naming the input last started.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(arg)) {
      inputs.push_back(arg);
    } else {
      fmt::print(stderr, "error: {}: no such file or directory\n", arg.string());
      return 2;
    }
  }
  if (inputs.empty()) {
    fmt::print(stderr, "usage: {} FILE|DIR...: no inputs given\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& p : inputs) {
    // Flushed before the run: if the input crashes the program, this is the last line printed.
    fmt::print("input {}\n", p.string());
    std::fflush(stdout);
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  fmt::print("{} inputs, no crash\n", inputs.size());
  return 0;
}
