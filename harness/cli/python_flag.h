// --python PROGRAM, shared by the commands that run a candidate (`run`, `check`, `verify`,
// `replay`): the Python a `py:FILE.py` candidate runs in (docs/python.md).
#pragma once

#include <CLI/CLI.hpp>

namespace ds::cli {

// Sets DRIFTSCOPE_PYTHON, which the candidate's process (and a check's or verify's runs) inherit.
void add_python_flag(CLI::App* cmd);

// Points DRIFTSCOPE_PYTHON_SDK at this program's own Python SDK (PREFIX/share/driftscope/python
// when installed, the checkout's python/ in a build tree) unless the environment already says.
void export_python_sdk_dir();

}  // namespace ds::cli
