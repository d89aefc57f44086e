#include "timeout_flag.h"

#include <stdexcept>
#include <string>

namespace ds::cli {

void add_timeout_flag(CLI::App* cmd, double& timeout_s) {
  cmd->add_option("--timeout", timeout_s,
                  "Seconds the candidate's load or one candidate step may take before it is reported as "
                  "crashed (hung, exit 4); 0: no limit")
      ->check(CLI::Validator(
          [](const std::string& v) {
            double s = -1;
            try {
              s = std::stod(v);
            } catch (const std::exception&) {
            }
            return s >= 0 ? std::string() : std::string("must be 0 (no limit) or a number of seconds");
          },
          "SECONDS"))
      ->capture_default_str();
}

}  // namespace ds::cli
