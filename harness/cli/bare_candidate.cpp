#include "bare_candidate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "build_process.h"
#include "program_path.h"
#include "identifier_scan.h"
#include "install_paths.h"
#include "runner.h"
#include "scaffold_files.h"
#include "version.h"

namespace ds::cli {

namespace fs = std::filesystem;

namespace {

std::string map_field(const std::string& path, const YAML::Node& n, std::string_view field) {
  if (!n.IsScalar())
    throw InputError(fmt::format("{}:{}: field '{}': must be a word", path, n.Mark().line + 1, field));
  return n.Scalar();
}

// `include_dirs`: one directory or a list, each relative to the map's own directory or absolute,
// and each one that exists (an InputError naming the map, the line and the directory otherwise).
std::vector<std::string> map_include_dirs(const std::string& path, const YAML::Node& n) {
  std::vector<YAML::Node> items;
  if (n.IsScalar()) {
    items.push_back(n);
  } else if (n.IsSequence()) {
    for (const auto& item : n) items.push_back(item);
  } else {
    throw InputError(fmt::format("{}:{}: field 'include_dirs': must be a directory or a list of them", path,
                                 n.Mark().line + 1));
  }
  const fs::path base = fs::absolute(path).parent_path();
  std::vector<std::string> dirs;
  for (const auto& item : items) {
    if (!item.IsScalar() || item.Scalar().empty())
      throw InputError(fmt::format("{}:{}: field 'include_dirs': each entry must be a directory", path,
                                   item.Mark().line + 1));
    const fs::path dir = (base / item.Scalar()).lexically_normal();
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw InputError(fmt::format("{}:{}: field 'include_dirs': {} is not a directory", path,
                                   item.Mark().line + 1, dir.string()));
    if (dir.string().find_first_of(";\n") != std::string::npos)
      throw InputError(
          fmt::format("{}:{}: field 'include_dirs': {}: a path with ';' or a newline cannot be handed to "
                      "CMake",
                      path, item.Mark().line + 1, dir.string()));
    dirs.push_back(dir.string());
  }
  return dirs;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Only what changed is written, so that a build kept in --work-dir stays incremental.
void write_if_changed(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (fs::exists(p, ec) && read_text(p) == text) return;
  std::ofstream out(p);
  out << text;
  if (!out) throw InputError(fmt::format("{}: cannot write the file", p.string()));
}

// A path as a quoted CMake argument.
std::string cmake_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The part of a failed build's log that says why: from the first error on, at most 40 lines
// (the compiler's own messages, which name the .cu's file:line through the rewriter's #line).
std::string relevant_tail(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::size_t from = lines.size() > 40 ? lines.size() - 40 : 0;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("error") != std::string::npos ||
        lines[i].find("undefined reference") != std::string::npos) {
      // The compiler's "In function ..." or the linker's "in function ..." line before it.
      from = i > 0 && (lines[i - 1].find("n function") != std::string::npos) ? i - 1 : i;
      break;
    }
  std::string out;
  for (std::size_t i = from; i < lines.size() && i < from + 40; ++i) out += "  " + lines[i] + "\n";
  return out;
}

// When the link misses the entry: where the .cu has a function of that name (with another
// signature), or that it has none; and, for a kind with an f16 variant, the map's other dtype
// (an f16 kernel under an f32 map is the likeliest other signature).
std::string entry_diagnosis(const std::string& source, const StageMap& map, const ScaffoldKind& kind,
                            const std::string& log) {
  if (log.find("undefined reference to `" + map.entry) == std::string::npos) return "";
  std::string signature(map.dtype == "f16" ? kind.signature_f16 : kind.signature);
  signature.replace(signature.find("NAME"), 4, map.entry);
  std::vector<std::string> lines;
  std::istringstream in(read_text(source));
  int n = 0;
  for (std::string l; std::getline(in, l);)
    if (++n, names_a_call(l, map.entry)) lines.push_back(fmt::format("{}:{}", source, n));
  if (lines.empty())
    return fmt::format("{} has no function {} (the entry of the stage map {}): the {} glue calls `{}`\n",
                       source, map.entry, map.path, map.kind, signature);
  const std::string other = map.dtype == "f16" ? "f32" : "f16";
  const std::string dtype_hint =
      kind.signature_f16.empty()
          ? ""
          : fmt::format("; `dtype: {}` in {} glues the {} variant instead", other, map.path, other);
  return fmt::format(
      "{}: {} is there, but not as the {} glue calls it: `{}` (a host function with C++ linkage){}\n",
      fmt::join(lines, ", "), map.entry, map.kind, signature, dtype_hint);
}

}  // namespace

StageMap read_stage_map(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("--stage-map {}: no such file", path));
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg));
  }
  if (!doc.IsMap())
    throw InputError(fmt::format("{}: a stage map is a mapping with `kind` ({}) and `entry`", path,
                                 scaffold_kind_names()));
  StageMap m;
  m.path = path;
  for (const auto& kv : doc) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (key == "kind")
      m.kind = map_field(path, kv.second, key);
    else if (key == "entry")
      m.entry = map_field(path, kv.second, key);
    else if (key == "dtype")
      m.dtype = map_field(path, kv.second, key);
    else if (key == "include_dirs")
      m.include_dirs = map_include_dirs(path, kv.second);
    else
      throw InputError(
          fmt::format("{}:{}: unknown field '{}' (a stage map has `kind`, `entry` and optionally `dtype` and "
                      "`include_dirs`)",
                      path, kv.first.Mark().line + 1, key));
  }
  if (m.kind.empty())
    throw InputError(fmt::format("{}: field 'kind' is missing (one of {})", path, scaffold_kind_names()));
  if (!find_scaffold_kind(m.kind))
    throw InputError(fmt::format("{}: field 'kind': unknown kind '{}' (the kinds are {})", path, m.kind,
                                 scaffold_kind_names()));
  if (m.dtype != "f32" && m.dtype != "f16")
    throw InputError(
        fmt::format("{}: field 'dtype': '{}' is neither f32 (the default) nor f16", path, m.dtype));
  if (m.dtype == "f16" && find_scaffold_kind(m.kind)->signature_f16.empty())
    throw InputError(fmt::format("{}: field 'dtype': the {} kind has no f16 variant (the kinds with one: {})",
                                 path, m.kind, scaffold_kind_names(true)));
  if (m.entry.empty())
    throw InputError(fmt::format(
        "{}: field 'entry' is missing: the host function of the .cu the {} glue calls", path, m.kind));
  if (m.entry.size() > kMaxEntryChars)
    throw InputError(
        fmt::format("{}: field 'entry': {} characters, longer than the {} a function name may have", path,
                    m.entry.size(), kMaxEntryChars));
  if (!is_identifier(m.entry))
    throw InputError(fmt::format(
        "{}: field 'entry': '{}' is not a function name (an unqualified C++ identifier)", path, m.entry));
  return m;
}

bool is_kernel_file(const std::string& candidate) { return fs::path(candidate).extension() == ".cu"; }

std::optional<StageMap> stage_map_for(const std::string& candidate, const std::string& stage_map) {
  if (is_kernel_file(candidate) && stage_map.empty())
    throw InputError(fmt::format("--candidate {}: a .cu needs --stage-map (docs/verify.md)", candidate));
  if (!is_kernel_file(candidate) && !stage_map.empty())
    throw InputError(fmt::format("--stage-map goes with --candidate FILE.cu, not {}", candidate));
  if (stage_map.empty()) return std::nullopt;
  return read_stage_map(stage_map);
}

nlohmann::json candidate_build_json(const BareCandidate& b, bool kept) {
  return {{"source", b.source},
          {"kind", b.map.kind},
          {"entry", b.map.entry},
          {"dtype", b.map.dtype},
          {"include_dirs", b.map.include_dirs},
          {"plugin", kept ? nlohmann::json(b.plugin) : nlohmann::json()}};
}

void default_fill_for_kernel_file(const std::string& cu, const StageMap& map, std::string& fill,
                                  bool fill_given) {
  if (fill_given || fill == "reference") return;
  fill = "reference";
  const ScaffoldKind* kind = find_scaffold_kind(map.kind);
  fmt::print(
      "{} computes {} only (a {} kernel): the reference fills every other stage (--fill reference; --fill "
      "none refuses the model instead)\n",
      cu, kind ? std::string(kind->stages) : map.kind, map.kind);
}

void model_for_kernel_file(const std::string& cu, const StageMap& map, std::string& model, bool model_given) {
  if (model_given) return;
  model = std::string(find_scaffold_kind(map.kind)->model);
  fmt::print("{} is a {} kernel: run in {}, the {} kind's model (--model picks another)\n", cu, map.kind,
             model, map.kind);
}

// The generated project's lines that hand the map's include_dirs to every build of the kernel.
std::string kernel_include_dirs(const std::string& name, const StageMap& map) {
  if (map.include_dirs.empty()) return {};
  std::vector<std::string> quoted;
  for (const auto& d : map.include_dirs) quoted.push_back(cmake_quoted(d));
  return fmt::format(
      "# include_dirs of {0}: the repository's own headers.\n"
      "foreach(flavour {1}_kernel {1}_kernel_checked {1}_kernel_cuda)\n"
      "  if(TARGET ${{flavour}})\n"
      "    target_include_directories(${{flavour}} PRIVATE {2})\n"
      "  endif()\n"
      "endforeach()\n",
      map.path, name, fmt::join(quoted, " "));
}

BareCandidate build_bare_candidate(const std::string& cu, const StageMap& map, const fs::path& dir,
                                   bool dir_kept) {
  BareCandidate b;
  b.map = map;
  std::error_code ec;
  if (!fs::is_regular_file(cu, ec)) throw InputError(fmt::format("--candidate {}: no such file", cu));
  b.source = fs::absolute(cu).lexically_normal().string();
  if (b.source.find_first_of(";\n") != std::string::npos)
    throw InputError(
        fmt::format("--candidate {}: a path with ';' or a newline cannot be handed to CMake", cu));
  const auto prefix = install_prefix();
  if (!prefix)
    throw InputError(fmt::format(
        "--candidate {}: a .cu is built against the installed Driftscope SDK, and this driftscope "
        "runs from a build tree, which has none: install it (`cmake --install BUILD --prefix P`) "
        "and run P/bin/driftscope, or build the plugin yourself (`driftscope new-candidate`)",
        cu));
  const ScaffoldKind& kind = *find_scaffold_kind(b.map.kind);
  const std::string name = scaffold_project_name(fs::path(b.source).stem().string());
  const std::string candidate = scaffold_candidate_name(name);
  const fs::path project = dir / "candidate";
  fs::create_directories(project, ec);
  if (ec)
    throw InputError(fmt::format("{}: cannot create the directory: {}", project.string(), ec.message()));
  // The CUDA flavour is off, so the SIMT build is the only one and always available here.
  const std::string unavailable = "driftscope_verify_unavailable";
  const ScaffoldVars vars = {{"@PREFIX@", prefix->string()},
                             {"@NAME@", name},
                             {"@CANDIDATE@", candidate},
                             {"@KERNEL@", std::string(kind.name)},
                             {"@KERNEL_SOURCE@", cmake_quoted(b.source)},
                             {"@KERNEL_INCLUDES@", kernel_include_dirs(name, b.map)},
                             {"@ENTRY@", b.map.entry},
                             {"@MODEL@", std::string(kind.model)},
                             {"@ELEM@", b.map.dtype == "f16" ? "__half" : "float"},
                             {"@ELEM_HEADER@", b.map.dtype == "f16" ? "#include <cuda_fp16.h>" : ""},
                             {"@UNAVAILABLE@", unavailable},
                             {"@SDK_VERSION@", DRIFTSCOPE_SDK_VERSION}};
  write_if_changed(project / "CMakeLists.txt", scaffold_text("CMakeLists.txt.in", vars));
  write_if_changed(project / "candidate.cpp",
                   scaffold_text(std::string(kind.name) + ".cpp", vars) +
                       fmt::format("\n// Written by driftscope verify for {}: built for the CPU only.\n"
                                   "std::string {}() {{ return {{}}; }}\n",
                                   b.source, unavailable));
  b.project = project.string();

  const BuildLimits limits = build_limits();
  const fs::path build = project / "build", log = project / "build.log";
  fs::remove(log, ec);
  fmt::print(
      "building {} ({}{}, entry {}) against {}: for the CPU only, the plugin and its checked twin (no nvcc "
      "flavour)\n",
      cu, b.map.kind, b.map.dtype == "f16" ? " f16" : "", b.map.entry, prefix->string());
  const auto started = std::chrono::steady_clock::now();
  std::fflush(stdout);
  // --no-undefined: an entry the .cu does not define (or defines with another signature) is a
  // link error here rather than a failed dlopen later.
  std::vector<std::string> configure = {"cmake", "-S", project.string(), "-B", build.string()};
  configure.insert(configure.end(), {"-DCMAKE_PREFIX_PATH=" + prefix->string(), "-D" + name + "_CUDA=OFF",
                                     "-DCMAKE_MODULE_LINKER_FLAGS=-Wl,--no-undefined"});
  // Ninja where there is one: about a fifth less CPU than CMake's Makefiles for the build, whose
  // recursive makes start CMake some thirty times, and a rebuild of an unchanged .cu all but free
  // (docs/verify.md). A build directory keeps the generator it was made with.
  if (!fs::exists(build / "CMakeCache.txt", ec) && !program_on_path("ninja").empty())
    configure.insert(configure.end(), {"-G", "Ninja"});
  const int configured = run_logged(configure, log, limits);
  if (configured == -1)
    throw InputError(
        fmt::format("--candidate {}: cmake was not found on the PATH; a .cu is built with cmake", cu));
  // The plugin first, then the rest (its checked twin): an error in the .cu is reported once, and
  // the twin is linked after the plugin (a twin older than its plugin is not used).
  const std::string jobs = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  int built = configured;
  if (built == 0)
    built = run_logged({"cmake", "--build", build.string(), "--target", name, "-j", jobs}, log, limits);
  if (built == 0) built = run_logged({"cmake", "--build", build.string(), "-j", jobs}, log, limits);
  if (built != 0) {
    const std::string text = read_text(log);
    const std::string limit = limit_diagnosis(text, limits);
    throw InputError(fmt::format(
        "--candidate {}: the {} failed (exit {}):\n{}the build log from its first error:\n{}{}", cu,
        configured != 0 ? "cmake configure step" : "build", built,
        !limit.empty() ? limit + "\n" : entry_diagnosis(b.source, b.map, kind, text), relevant_tail(text),
        dir_kept ? fmt::format("The whole build log: {}", log.string())
                 : "(--work-dir DIR keeps the generated project and its build log)"));
  }
  b.plugin = (build / ("lib" + name + ".so")).string();
  fmt::print("built in {:.0f} s\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return b;
}

}  // namespace ds::cli
