#include "python_flag.h"

#include <cstdlib>
#include <string>

#include "install_paths.h"

namespace ds::cli {

void add_python_flag(CLI::App* cmd) {
  cmd->add_option_function<std::string>(
         "--python", [](const std::string& program) { ::setenv("DRIFTSCOPE_PYTHON", program.c_str(), 1); },
         "The Python a py:FILE.py candidate runs in (default: $DRIFTSCOPE_PYTHON, else python3 on PATH); it "
         "needs numpy")
      ->type_name("PROGRAM");
}

void export_python_sdk_dir() {
  if (std::getenv("DRIFTSCOPE_PYTHON_SDK")) return;
  ::setenv("DRIFTSCOPE_PYTHON_SDK", python_sdk_dir().string().c_str(), 0);
}

}  // namespace ds::cli
