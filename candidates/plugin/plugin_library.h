// A plugin file: `--candidate PATH.so` (every candidate it registers) or `PATH.so:NAME`.
//
// Only the candidate's child process (and `replay`, which runs in-process on purpose) opens
// the library; the harness learns what it registers through a forked probe (plugin_candidate.h).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"
#include "plugin.h"

namespace ds {

// The file is not a usable plugin (missing, not a shared library, no entry point, another
// ABI, no such candidate): bad input, exit 2.
struct PluginError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct PluginSpec {
  std::string path;  // as given
  std::string name;  // empty: every candidate the plugin registers
};
// A candidate spec naming a plugin: "[plugin:]PATH.so[:NAME]". nullopt for built-in names.
std::optional<PluginSpec> parse_plugin_spec(std::string_view spec);

// What a plugin file is and registers, and which build it is.
struct PluginInfo {
  std::string path;    // absolute
  std::string sha256;  // of the file's bytes
  std::string plugin_version, sdk_version;
  std::vector<std::string> names;
};

class PluginLibrary {
 public:
  // dlopen()s and checks the file in this process; throws PluginError naming the file and, for
  // an ABI mismatch, both versions.
  explicit PluginLibrary(const std::string& path);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  PluginInfo info() const;
  // A new candidate named `name`; throws PluginError naming the ones the plugin has.
  CandidatePtr make(const std::string& name) const;
  // The dlopen handle, for symbols the harness looks up beyond the entry point.
  void* handle() const { return handle_; }

 private:
  std::string path_;
  void* handle_ = nullptr;
  const ds_plugin* plugin_ = nullptr;
};

}  // namespace ds
