// Where a code address lives: its module file and the address its symbol and line tables use,
// and, through binutils' addr2line when it is installed, its source file:line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace simt::detail {

struct ModuleAddress {
  std::string file;          // readable path of the module (/proc/self/exe for the main program)
  std::string name;          // the module as the loader names it
  std::uint64_t value = 0;   // what the module's .symtab and DWARF call this address
  std::uint64_t offset = 0;  // from the module's load address
};

std::optional<ModuleAddress> module_address(const void* addr);
// "file:line", innermost first, inlined frames joined by " inlined at ", for the instruction at
// `pc`; empty when addr2line is missing or the module has no line table.
std::string source_line(const void* pc);

}  // namespace simt::detail
