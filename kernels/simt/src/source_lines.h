// Where a code address lives: its module file and the address its symbol and line tables use,
// and, through binutils' addr2line when it is installed, its source file:line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simt::detail {

struct ModuleAddress {
  std::string file;          // readable path of the module (/proc/self/exe for the main program)
  std::string name;          // the module as the loader names it
  std::uint64_t value = 0;   // what the module's .symtab and DWARF call this address
  std::uint64_t offset = 0;  // from the module's load address
};

std::optional<ModuleAddress> module_address(const void* addr);
// "file:line" of the instruction at `pc` in the kernel's own file: of its inlined frames, the
// innermost one in the file of the outermost (a `__half` conversion inlined from cuda_fp16.hpp, or
// an atomic from the runtime's header, is named at the kernel's line that calls it; a helper
// function of the kernel's own file at its own line). Empty when no symbolizer is installed or the
// module has no line table.
std::string source_line(const void* pc);
// That frame of `frames` (innermost first, each "file:line"), or empty.
std::string kernel_frame(const std::vector<std::string>& frames);
// source_line, or where there is none the module and offset ("libmine.so+0x360da").
std::string site_text(const void* pc);

}  // namespace simt::detail
