#include "source_lines.h"

#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace simt::detail {

std::optional<ModuleAddress> module_address(const void* addr) {
  Dl_info info{};
  if (dladdr(addr, &info) == 0 || info.dli_fbase == nullptr) return std::nullopt;
  ModuleAddress m;
  m.offset =
      static_cast<std::uint64_t>(static_cast<const char*>(addr) - static_cast<const char*>(info.dli_fbase));
  // glibc names the main program by its argv[0], which may be relative to a directory we have left.
  const bool main_program = info.dli_fname == nullptr || info.dli_fname[0] == '\0' ||
                            std::strcmp(info.dli_fname, program_invocation_name) == 0;
  m.file = main_program ? "/proc/self/exe" : info.dli_fname;
  m.name = info.dli_fname ? info.dli_fname : "?";
  // A position-independent module's tables hold offsets from its load address; a fixed-address
  // executable's hold the addresses themselves.
  const bool fixed = static_cast<const Elf64_Ehdr*>(info.dli_fbase)->e_type == ET_EXEC;
  m.value = fixed ? std::uint64_t(reinterpret_cast<std::uintptr_t>(addr)) : m.offset;
  return m;
}

namespace {

// The frames of a symbolizer's output, innermost first; llvm-symbolizer prints a function line
// before each and a column after the line.
std::vector<std::string> parse_frames(const std::string& text, bool llvm) {
  std::vector<std::string> frames;
  std::size_t at = 0;
  for (int n = 0; at < text.size(); ++n) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    at = end + 1;
    while (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      n = -1;  // llvm-symbolizer ends each address with a blank line
      continue;
    }
    if (llvm && n % 2 == 0) continue;  // the function name
    if (const auto d = line.find(" (discriminator"); d != std::string::npos) line.erase(d);
    if (llvm) {  // file:line:column
      const auto last = line.rfind(':');
      if (last != std::string::npos && line.find(':') != last) line.erase(last);
    }
    if (line.rfind("??", 0) == 0 || line.ends_with(":0")) continue;
    frames.push_back(std::move(line));
  }
  return frames;
}

// A sandboxed candidate's process may not exec (docs/sandbox.md): its symbolizer runs in a helper
// the harness started before the sandbox closed, reached through DRIFTSCOPE_SYMBOLIZER_FD. A request
// is "TOOL\tFILE\tADDRESS\n" (TOOL: llvm or addr2line); the answer is the tool's output and a line
// holding only \x04.
std::string ask_symbolizer(int fd, bool llvm, const std::string& file, std::uint64_t address) {
  static std::mutex mutex;  // the launches of a block may report from several host threads
  std::lock_guard lock(mutex);
  const std::string request = fmt::format("{}\t{}\t{:#x}\n", llvm ? "llvm" : "addr2line", file, address);
  if (::write(fd, request.data(), request.size()) != ssize_t(request.size())) return {};
  std::string answer;
  char buf[4096];
  for (;;) {
    if (answer.size() >= 2 && answer.compare(answer.size() - 2, 2, "\x04\n") == 0 &&
        (answer.size() == 2 || answer[answer.size() - 3] == '\n')) {
      answer.resize(answer.size() - 2);
      return answer;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return {};
    answer.append(buf, std::size_t(n));
  }
}

std::vector<std::string> run_symbolizer(bool llvm, const std::string& file, std::uint64_t address) {
  if (const char* fd = std::getenv("DRIFTSCOPE_SYMBOLIZER_FD"))
    return parse_frames(ask_symbolizer(std::atoi(fd), llvm, file, address), llvm);
  std::string quoted;  // single-quoted for the shell
  for (char c : file) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const std::string cmd =
      llvm ? fmt::format("llvm-symbolizer --obj='{}' --inlining {:#x} 2>/dev/null", quoted, address)
           : fmt::format("addr2line -i -e '{}' {:#x} 2>/dev/null", quoted, address);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string text;
  char buf[1024];
  while (std::fgets(buf, sizeof buf, p) != nullptr) text += buf;
  ::pclose(p);
  return parse_frames(text, llvm);
}

std::string_view file_of(std::string_view frame) { return frame.substr(0, frame.rfind(':')); }

}  // namespace

std::string kernel_frame(const std::vector<std::string>& frames) {
  if (frames.empty()) return {};
  const std::string_view outer = file_of(frames.back());
  for (const std::string& f : frames)
    if (file_of(f) == outer) return f;
  return frames.back();
}

std::string source_line(const void* pc) {
  const auto m = module_address(pc);
  if (!m) return {};
  std::string file = m->file;
  if (file == "/proc/self/exe") {  // in the symbolizer's process that names the symbolizer
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    file.assign(buf, static_cast<std::size_t>(n));
  }
  // llvm-symbolizer first: binutils 2.40's addr2line names the wrong file of GCC 12's DWARF 5 line
  // table for code of an #included .cu (driftscope_add_simt_kernel builds exactly that).
  std::vector<std::string> frames = run_symbolizer(true, file, m->value);
  if (frames.empty()) frames = run_symbolizer(false, file, m->value);
  return kernel_frame(frames);
}

std::string site_text(const void* pc) {
  if (pc == nullptr) return "an unknown site";
  std::string line = source_line(pc);
  if (!line.empty()) return line;
  const auto m = module_address(pc);
  return m ? fmt::format("{}+{:#x}", m->name, m->offset) : fmt::format("{}", pc);
}

}  // namespace simt::detail
