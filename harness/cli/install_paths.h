// Where this driftscope program is installed, and the YAML files it ships (policies, dump
// mappings) found by name: an installed driftscope has no source checkout to read them from.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ds::cli {

// The prefix this program was installed into (`cmake --install BUILD --prefix P`): P when the
// program is P/bin/driftscope and P holds the SDK's package files; nullopt in a build tree.
std::optional<std::filesystem::path> install_prefix();

// `--policy strict`, `--mapping llama.cpp-llama`: `arg` itself when something is there or it is a
// path (the reader names what is wrong with it); otherwise the shipped file `<arg>` or
// `<arg>.yaml` of `kind` ("policies" or "dumps"):
// from PREFIX/share/driftscope/<kind>/ when installed, from the source checkout's fixtures/<kind>/
// when run from a build tree. A name not shipped is an InputError naming `option`, the directory
// looked in and the shipped names.
std::string find_shipped_yaml(std::string_view kind, const std::string& arg, std::string_view option);

// The Python SDK (python/driftscope): PREFIX/share/driftscope/python when installed, the source
// checkout's python/ when run from a build tree.
std::filesystem::path python_sdk_dir();

}  // namespace ds::cli
