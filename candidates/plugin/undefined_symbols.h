// Every symbol a shared library needs and nothing loaded provides. dlopen names only the first
// one it meets; a kernel file from elsewhere, built without driftscope_add_simt_kernel's check,
// typically calls several CUDA-family functions the SIMT runtime lacks, and the user should learn
// of them all at once.
#pragma once

#include <string>
#include <vector>

namespace ds {

// The strong undefined symbols in the dynamic symbol table of the ELF64 file `path` that neither
// the library's dependencies nor the process provide, in table order. Empty when the file is not
// a readable ELF64 library, or when it cannot be opened even lazily (a missing data symbol; then
// dlopen's own message is all there is).
std::vector<std::string> unresolved_symbols(const std::string& path);

}  // namespace ds
