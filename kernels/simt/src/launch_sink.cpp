// Names come from the module's symbol tables: dladdr finds exported kernels; a kernel with
// internal linkage (static, an anonymous namespace) or one linked into an executable is only in
// the static table (.symtab), read from the module's ELF file. A stripped module leaves the
// module and offset, which `addr2line -e MODULE OFFSET` turns into file:line.
#include "launch_sink.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "source_lines.h"

namespace simt::detail {
namespace {

struct Sink {
  simt_launch_sink fn = nullptr;
  void* user = nullptr;
};
std::atomic<const Sink*> g_sink{nullptr};

// The function symbol at `value` in the .symtab of the ELF file `path`; empty when the file has no
// such table (stripped) or cannot be read. Every offset is checked against the file's size.
std::string elf_static_symbol(const char* path, std::uint64_t value) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  void* map = ::fstat(fd, &st) == 0 && st.st_size > 0
                  ? ::mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return {};
  const auto* base = static_cast<const unsigned char*>(map);
  const std::uint64_t size = std::uint64_t(st.st_size);
  const auto fits = [size](std::uint64_t off, std::uint64_t n) { return off <= size && n <= size - off; };
  std::string found;
  Elf64_Ehdr eh;
  if (fits(0, sizeof eh)) std::memcpy(&eh, base, sizeof eh);
  const bool elf64 = fits(0, sizeof eh) && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
                     eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(Elf64_Shdr);
  for (unsigned i = 0; elf64 && found.empty() && i < eh.e_shnum; ++i) {
    Elf64_Shdr sh, strtab;
    if (!fits(eh.e_shoff + std::uint64_t(i) * sizeof sh, sizeof sh)) break;
    std::memcpy(&sh, base + eh.e_shoff + std::uint64_t(i) * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || !fits(sh.sh_offset, sh.sh_size)) continue;
    if (!fits(eh.e_shoff + std::uint64_t(sh.sh_link) * sizeof strtab, sizeof strtab)) continue;
    std::memcpy(&strtab, base + eh.e_shoff + std::uint64_t(sh.sh_link) * sizeof strtab, sizeof strtab);
    if (!fits(strtab.sh_offset, strtab.sh_size)) continue;
    for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= sh.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, base + sh.sh_offset + at, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value != value || sym.st_name >= strtab.sh_size)
        continue;
      const char* name = reinterpret_cast<const char*>(base + strtab.sh_offset + sym.st_name);
      found.assign(name, ::strnlen(name, std::size_t(strtab.sh_size - sym.st_name)));
      break;
    }
  }
  ::munmap(map, std::size_t(size));
  return found;
}

std::string symbol_name(void (*kernel)()) {
  void* addr = nullptr;
  static_assert(sizeof addr == sizeof kernel);
  std::memcpy(&addr, &kernel, sizeof addr);
  Dl_info info{};
  if (dladdr(addr, &info) == 0) return fmt::format("kernel@{}", addr);
  if (info.dli_sname != nullptr && info.dli_saddr == addr) return kernel_display_name(info.dli_sname);
  const auto m = module_address(addr);
  if (!m) return fmt::format("kernel@{}", addr);
  const std::string sym = elf_static_symbol(m->file.c_str(), m->value);
  if (!sym.empty()) return kernel_display_name(sym.c_str());
  return fmt::format("{}+{:#x}", m->name, m->offset);
}

}  // namespace

const std::string& kernel_name(void (*kernel)()) {
  static std::mutex m;
  static std::map<void (*)(), std::string> names;  // dladdr and demangling once per kernel
  std::lock_guard lock(m);
  auto it = names.find(kernel);
  if (it == names.end()) it = names.emplace(kernel, symbol_name(kernel)).first;
  return it->second;
}

bool launch_sink_installed() { return g_sink.load(std::memory_order_acquire) != nullptr; }

void report_launch(const LaunchDesc& d, double seconds) {
  const Sink* s = g_sink.load(std::memory_order_acquire);
  if (s == nullptr) return;
  const simt_launch_info info{kernel_name(d.kernel).c_str(),
                              {d.grid.x, d.grid.y, d.grid.z},
                              {d.block.x, d.block.y, d.block.z},
                              d.dyn_smem_bytes,
                              seconds};
  s->fn(&info, s->user);
}

}  // namespace simt::detail

extern "C" void driftscope_simt_set_launch_sink(simt_launch_sink sink, void* user) {
  // A concurrent launch may still read the sink being replaced, so none is ever freed before exit:
  // each install appends to a list with stable addresses (a few bytes per install).
  static std::mutex m;
  static std::deque<simt::detail::Sink> installed;
  const simt::detail::Sink* s = nullptr;
  if (sink != nullptr) {
    std::lock_guard lock(m);
    s = &installed.emplace_back(simt::detail::Sink{sink, user});
  }
  simt::detail::g_sink.store(s, std::memory_order_release);
}
