#include "plugin_library.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

#include "sha256.h"
#include "undefined_symbols.h"
#include "user_file.h"

namespace ds {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Names the problem before dlopen's own words: a text file or a random blob gets "not an ELF
// shared library", not a linker message about "invalid ELF header".
std::string not_a_library_reason(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() < 4 || magic[0] != 0x7f || magic[1] != 'E' || magic[2] != 'L' || magic[3] != 'F')
    return "not an ELF shared library";
  return {};
}

}  // namespace

std::optional<PluginSpec> parse_plugin_spec(std::string_view spec) {
  if (spec.rfind("plugin:", 0) == 0)
    spec.remove_prefix(7);
  else if (!ends_with(spec, ".so") && spec.find(".so:") == std::string_view::npos)
    return std::nullopt;
  PluginSpec p;
  const std::size_t colon = spec.rfind(".so:");
  if (colon != std::string_view::npos) {
    p.path = std::string(spec.substr(0, colon + 3));
    p.name = std::string(spec.substr(colon + 4));
  } else {
    p.path = std::string(spec);
  }
  return p;
}

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw PluginError(fmt::format("plugin {}: no such file", path));
  if (auto why = special_file_problem(path)) throw PluginError(fmt::format("plugin {}", *why));
  if (const std::string why = not_a_library_reason(path); !why.empty())
    throw PluginError(fmt::format("plugin {}: {}", path, why));
  // A path without a slash would make dlopen search the library path instead of this file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const std::string why = ::dlerror();
    if (why.find("undefined symbol") != std::string::npos)
      if (const std::vector<std::string> missing = unresolved_symbols(open_path); missing.size() > 1)
        throw PluginError(fmt::format(
            "plugin {}: cannot be loaded: {} undefined symbols: {} (a CUDA-family one is a call the SIMT "
            "runtime does not have: docs/simt.md lists what it covers, and driftscope_add_simt_kernel() "
            "lists them at build time, each at its line)",
            path, missing.size(), fmt::join(missing, ", ")));
    throw PluginError(fmt::format("plugin {}: cannot be loaded: {}", path, why));
  }
  auto entry = reinterpret_cast<ds_plugin_entry_fn>(::dlsym(handle_, DRIFTSCOPE_PLUGIN_ENTRY));
  if (!entry)
    throw PluginError(fmt::format(
        "plugin {}: no entry point '{}' (a Driftscope plugin exports it with DRIFTSCOPE_PLUGIN(...) "
        "from plugin.h)",
        path, DRIFTSCOPE_PLUGIN_ENTRY));
  plugin_ = entry();
  if (!plugin_)
    throw PluginError(fmt::format("plugin {}: {}() returned null", path, DRIFTSCOPE_PLUGIN_ENTRY));
  if (plugin_->abi_version != DRIFTSCOPE_PLUGIN_ABI_VERSION)
    throw PluginError(fmt::format(
        "plugin {}: built for plugin ABI {}, but this driftscope ({}) speaks plugin ABI {}: rebuild the "
        "plugin against this SDK",
        path, plugin_->abi_version, DRIFTSCOPE_SDK_VERSION, DRIFTSCOPE_PLUGIN_ABI_VERSION));
  if (plugin_->n_candidates == 0 || !plugin_->candidates)
    throw PluginError(fmt::format("plugin {}: registers no candidate", path));
}

PluginLibrary::~PluginLibrary() {
  // Never dlclose: candidates made from it may still be alive, and a plugin's static
  // destructors are its own business once the process ends.
}

PluginInfo PluginLibrary::info() const {
  PluginInfo info;
  std::error_code ec;
  info.path = std::filesystem::absolute(path_, ec).lexically_normal().string();
  info.sha256 = sha256_file(path_);
  info.plugin_version = plugin_->plugin_version ? plugin_->plugin_version : "";
  info.sdk_version = plugin_->sdk_version ? plugin_->sdk_version : "";
  for (std::uint32_t i = 0; i < plugin_->n_candidates; ++i)
    info.names.emplace_back(plugin_->candidates[i].name ? plugin_->candidates[i].name : "");
  return info;
}

CandidatePtr PluginLibrary::make(const std::string& name) const {
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < plugin_->n_candidates; ++i) {
    const ds_plugin_candidate& c = plugin_->candidates[i];
    const std::string n = c.name ? c.name : "";
    if (n == name && c.make) {
      CandidatePtr cand(c.make());
      if (!cand)
        throw PluginError(fmt::format("plugin {}: making candidate '{}' returned null", path_, name));
      return cand;
    }
    names.push_back(n);
  }
  throw PluginError(
      fmt::format("plugin {} has no candidate '{}' (it registers: {})", path_, name, fmt::join(names, ", ")));
}

}  // namespace ds
