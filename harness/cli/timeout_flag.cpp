#include "timeout_flag.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace ds::cli {

CLI::Validator seconds_validator(double max, std::string refusal) {
  return CLI::Validator(
      [max, refusal](const std::string& v) {
        double s = -1;
        try {
          s = std::stod(v);
        } catch (const std::exception&) {
        }
        // NaN compares false both ways: only a number of seconds passes.
        return s >= 0 && s <= max ? std::string() : refusal;
      },
      "SECONDS");
}

void add_timeout_flag(CLI::App* cmd, double& timeout_s) {
  cmd->add_option("--timeout", timeout_s,
                  "Seconds the candidate's load or one candidate step may take before it is reported as "
                  "crashed (hung, exit 4); 0: no limit")
      ->check(seconds_validator(std::numeric_limits<double>::infinity(),
                                "must be 0 (no limit) or a number of seconds"))
      ->capture_default_str();
}

}  // namespace ds::cli
