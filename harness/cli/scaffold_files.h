// The templates of `driftscope new-candidate`, compiled into the program (harness/cli/scaffold/).
#pragma once

#include <string_view>
#include <vector>

namespace ds::cli {

struct ScaffoldFile {
  std::string_view name;  // e.g. "rmsnorm.cu", "CMakeLists.txt.in"
  std::string_view text;  // with @NAME@, @CANDIDATE@, @KERNEL@, @SDK_VERSION@, @PREFIX@ to substitute
};
const std::vector<ScaffoldFile>& scaffold_files();

}  // namespace ds::cli
