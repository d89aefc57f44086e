// driftscope new-candidate DIR --kernel K: a small project that builds as is against the
// installed SDK: CMakeLists.txt, one kernel .cu, the candidate (its plan and run), a README.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "commands.h"
#include "install_paths.h"
#include "runner.h"
#include "scaffold_files.h"
#include "version.h"

namespace ds::cli {

namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw InputError(fmt::format("{}: cannot write the file", p.string()));
}

}  // namespace

void add_new_candidate_command(CLI::App& app, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  auto kernel = std::make_shared<std::string>("rmsnorm");
  CLI::App* cmd = app.add_subcommand(
      "new-candidate",
      "Write a plugin candidate project around one kernel, ready to build against the installed SDK");
  cmd->add_option("dir", *dir, "The project directory to create (must not exist, or be empty)")->required();
  std::vector<std::string> kinds;
  for (const ScaffoldKind& k : scaffold_kinds()) kinds.emplace_back(k.name);
  cmd->add_option("--kernel", *kernel, "The kernel's kind (its stages): " + scaffold_kinds_text())
      ->check(CLI::IsMember(kinds))
      ->capture_default_str();
  cmd->callback([dir, kernel, &exit_code] {
    namespace fs = std::filesystem;
    try {
      const fs::path root = fs::absolute(*dir);
      std::error_code ec;
      if (fs::exists(root, ec) && !(fs::is_directory(root, ec) && fs::is_empty(root, ec)))
        throw InputError(fmt::format("{}: exists and is not an empty directory", root.string()));
      fs::create_directories(root, ec);
      if (ec)
        throw InputError(fmt::format("{}: cannot create the directory: {}", root.string(), ec.message()));
      const ScaffoldKind& kind = *find_scaffold_kind(*kernel);
      const std::string name = scaffold_project_name(root.filename().string());
      const std::string candidate = scaffold_candidate_name(name);
      // The prefix this driftscope was installed into is the one to build against; a build tree
      // has none, and the README says what to do instead of printing a made-up path.
      const auto installed = install_prefix();
      const std::string prefix = installed ? installed->string() : "<driftscope's install prefix>";
      const std::vector<std::pair<std::string, std::string>> vars = {
          {"@PREFIX@", prefix},
          {"@NAME@", name},
          {"@CANDIDATE@", candidate},
          {"@KERNEL@", *kernel},
          {"@KERNEL_SOURCE@", *kernel + ".cu"},
          {"@KERNEL_INCLUDES@", ""},
          {"@ENTRY@", *kernel + "_forward"},
          {"@UNAVAILABLE@", *kernel + "_unavailable"},
          {"@MODEL@", std::string(kind.model)},
          {"@ELEM@", "float"},
          {"@ELEM_HEADER@", ""},
          {"@SDK_VERSION@", DRIFTSCOPE_SDK_VERSION}};
      write_file(root / "CMakeLists.txt", scaffold_text("CMakeLists.txt.in", vars));
      write_file(root / "README.md", scaffold_text("README.md.in", vars));
      write_file(root / (*kernel + ".cu"), scaffold_text(*kernel + ".cu", vars));
      write_file(root / "candidate.cpp", scaffold_text(*kernel + ".cpp", vars));
      fmt::print("wrote {}: CMakeLists.txt, {}.cu, candidate.cpp, README.md\n\n", root.string(), *kernel);
      fmt::print("  cmake -S {0} -B {0}/build -DCMAKE_PREFIX_PATH={1}\n", root.string(), prefix);
      fmt::print("  cmake --build {}/build\n", root.string());
      fmt::print("  driftscope run --model {} --candidate {}/build/lib{}.so --fill reference --mode both\n",
                 kind.model, root.string(), name);
      if (!installed)
        fmt::print(
            "\nThis driftscope runs from a build tree, not an install: `cmake --install BUILD --prefix P` "
            "and build against P.\n");
      exit_code = 0;
    } catch (const InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      exit_code = kExitUsage;
    }
  });
}

}  // namespace ds::cli
