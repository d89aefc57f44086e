#include "fuzz_files.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ds::fuzz {

namespace {

struct Scratch {
  std::string dir;
  Scratch() {
    // tmpfs when there is one: millions of small writes should not reach a disk.
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string templ = fmt::format("{}/ds_fuzz_XXXXXX", base);
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed: " + templ);
    dir = templ;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

const std::string& scratch_dir() {
  static const Scratch scratch;
  return scratch.dir;
}

std::string write_scratch(std::string_view name, std::string_view bytes) {
  const std::string path = fmt::format("{}/{}", scratch_dir(), name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write the fuzz input to " + path);
  return path;
}

}  // namespace ds::fuzz
