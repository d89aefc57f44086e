// Which build of Driftscope this is, as recorded in every trace. Defined in a file CMake
// generates (harness/run/build_info.cpp.in), so a new git revision recompiles that file only.
#pragma once

namespace ds {

const char* tool_version();  // the project version, "0.2.0"
const char* git_revision();  // short revision of the source tree at configure time, or "unknown"

}  // namespace ds
