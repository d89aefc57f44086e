#pragma once
// Where exec would find a program: the child processes Driftscope starts (a Python interpreter, the
// build of a user's .cu) are named as users name them, on their PATH.
#include <string>

namespace ds {

// `program` itself when it has a '/' and is executable, else the first executable PROGRAM in a
// directory of $PATH (/usr/bin:/bin when unset); "" when exec would not find it.
std::string program_on_path(const std::string& program);

}  // namespace ds
