#include "report_options.h"

#include "install_paths.h"

namespace ds::cli {

void add_report_options(CLI::App* cmd, ReportOptions& opt) {
  cmd->add_option(
      "--policy", opt.policy,
      "Tolerance policy: a YAML file, or the name of a shipped one (strict, default; installed under "
      "share/driftscope/policies/); without it: dtype defaults in isolated mode, noise floor in chained "
      "mode");
  cmd->add_option("--json", opt.files.json, "Also write the result as JSON to this file");
  cmd->add_option("--junit", opt.files.junit,
                  "Also write a JUnit XML report (one testcase per judged stage)");
  cmd->add_option("--markdown", opt.files.markdown, "Also write a Markdown summary");
}

Policy load_policy(const ReportOptions& opt) {
  if (opt.policy.empty()) return Policy::dtype_defaults();
  try {
    return Policy::from_file(find_shipped_yaml("policies", opt.policy, "--policy"));
  } catch (const PolicyError& e) {
    throw InputError(e.what());
  }
}

}  // namespace ds::cli
