#include "program_path.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace ds {

std::string program_on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', at), dirs.size());
    // An empty entry is the current directory, as exec reads it.
    const std::string full = (end > at ? dirs.substr(at, end - at) : ".") + "/" + program;
    if (::access(full.c_str(), X_OK) == 0) return full;
    at = end + 1;
  }
  return "";
}

}  // namespace ds
