#include "undefined_symbols.h"

#include <dlfcn.h>
#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace ds {

namespace {

// The names of the strong undefined symbols of .dynsym: what the library expects others to define.
std::vector<std::string> undefined_dynamic_symbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (bytes.size() < sizeof eh) return {};
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > bytes.size() ||
      eh.e_shnum > (bytes.size() - eh.e_shoff) / sizeof(Elf64_Shdr))
    return {};
  const auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, bytes.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sym = section(i);
    if (sym.sh_type != SHT_DYNSYM || sym.sh_link >= eh.e_shnum || sym.sh_entsize != sizeof(Elf64_Sym))
      continue;
    const Elf64_Shdr str = section(sym.sh_link);
    if (sym.sh_offset > bytes.size() || sym.sh_size > bytes.size() - sym.sh_offset ||
        str.sh_offset > bytes.size() || str.sh_size > bytes.size() - str.sh_offset)
      return {};
    for (std::size_t k = 1; k < sym.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym s;
      std::memcpy(&s, bytes.data() + sym.sh_offset + k * sizeof s, sizeof s);
      if (s.st_shndx != SHN_UNDEF || ELF64_ST_BIND(s.st_info) == STB_WEAK || s.st_name >= str.sh_size)
        continue;
      const char* name = bytes.data() + str.sh_offset + s.st_name;
      const std::size_t len = strnlen(name, str.sh_size - s.st_name);
      if (len > 0) out.emplace_back(name, len);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> unresolved_symbols(const std::string& path) {
  const std::vector<std::string> wanted = undefined_dynamic_symbols(path);
  if (wanted.empty()) return {};
  // Lazily, calls bind at their first use: the library opens though functions are missing, and each
  // can be looked up. Its constructors run, as they did in the failed attempt.
  void* lazy = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (lazy == nullptr) return {};
  std::vector<std::string> missing;
  for (const std::string& name : wanted)
    if (::dlsym(lazy, name.c_str()) == nullptr && ::dlsym(RTLD_DEFAULT, name.c_str()) == nullptr)
      missing.push_back(name);
  ::dlclose(lazy);
  return missing;
}

}  // namespace ds
