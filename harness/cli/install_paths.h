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

// `--policy strict`, `--mapping llama.cpp-llama`: `arg` itself when it is a file; otherwise, when it
// names no directory, the shipped file `<arg>` or `<arg>.yaml` of `kind` ("policies" or "dumps"):
// from PREFIX/share/driftscope/<kind>/ when installed, from the source checkout's fixtures/<kind>/
// when run from a build tree. Anything else is an InputError naming `option`, the paths looked in
// and the shipped names.
std::string find_shipped_yaml(std::string_view kind, const std::string& arg, std::string_view option);

}  // namespace ds::cli
