// A candidate written in Python: `--candidate py:FILE.py[:NAME]` (docs/python.md).
//
// Like a plugin, its code never runs in the harness: its declarations and plans come from short
// probes of a Python process (python_process.h), and load() starts the process that serves the
// steps, which the harness calls in the candidate's child process (crash isolation, timeouts).
// The weights go to Python one tensor at a time, when it asks for them.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "candidate.h"
#include "plugin/plugin_library.h"
#include "plugin/probed_candidate.h"

namespace ds {

namespace python {
class PythonProcess;
}

struct PythonSpec {
  std::string path, name;  // name empty: the file's only candidate
};
// "py:FILE.py" or "py:FILE.py:NAME"; nullopt for anything else.
std::optional<PythonSpec> parse_python_spec(std::string_view spec);

class PythonCandidate final : public ProbedCandidate {
 public:
  // Probes the file: throws PluginError (no such file, a syntax error, no candidate of that
  // name, a package it imports missing) or CandidateCrash (its code raised or hung).
  PythonCandidate(const std::string& path, const std::string& name);
  ~PythonCandidate() override;

  // The names of the candidates the file defines.
  static std::vector<std::string> names(const std::string& path);
  // Path, SHA-256, the candidate's version and the SDK's, as a plugin's (recorded in traces).
  const PluginInfo& info() const { return info_; }

  std::vector<KernelStep> plan(const ModelConfig& cfg, BlockKind kind) const override;
  void load(const ModelConfig& cfg, const WeightStore& weights) override;
  void run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
           TensorMap& outputs) override;

 private:
  // Waits for the serving process's answer, handing it every weight it asks for on the way.
  std::string answer(const std::string& what);

  std::string path_;
  PluginInfo info_;
  ModelConfig cfg_;
  const WeightStore* weights_ = nullptr;
  std::unique_ptr<python::PythonProcess> proc_;
};

}  // namespace ds
