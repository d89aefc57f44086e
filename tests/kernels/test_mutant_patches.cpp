// kernels/mutants/make_mutant.cmake, the build step that turns a mutant's patch into its source:
// run on a small production tree of its own, it writes the patched kernel file with the mutant's
// plant(), or fails with a message that names the mutant and its patch (docs/mutants.md).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The production tree every case patches: one kernel file and one header.
const char* const kKernel =
    "#include \"common.cuh\"\n"
    "\n"
    "namespace DSK_NS {\n"
    "void k(float* y) {\n"
    "  y[0] = 1.0f;\n"
    "  y[1] = 2.0f;\n"
    "  y[2] = 3.0f;\n"
    "}\n"
    "}  // namespace DSK_NS\n";
const char* const kHeader =
    "#pragma once\n"
    "inline float half_of(float v) {\n"
    "  return v / 2.0f;\n"
    "}\n";

const char* const kPlantedHunk =
    "--- a/kernels/k.cu\n"
    "+++ b/kernels/k.cu\n"
    "@@ -4,5 +4,5 @@\n"
    " void k(float* y) {\n"
    "   y[0] = 1.0f;\n"
    "-  y[1] = 2.0f;\n"
    "+  y[1] = 5.0f;  // planted\n"
    "   y[2] = 3.0f;\n"
    " }\n";

struct Case {
  const char* name;
  std::string patch;                   // kernels/mutants/demo.patch
  int exit_code;                       // of the generator: 0, or non-zero
  std::vector<std::string> says;       // in its output
  std::vector<std::string> generated;  // in the generated demo.cu
  std::vector<std::string> files;      // every file of the output folder
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string described(const std::string& extra) { return "mutant:demo: y[1] is off.\n" + extra; }

const Case kCases[] = {
    {"applies",
     described("plant: k\n") + kPlantedHunk,
     0,
     {},
     {"  y[1] = 5.0f;  // planted\n", "// mutant:demo: y[1] is off.\n",
      "namespace DSK_NS {\nvoid plant(dsk::KernelTable& t) {\n  t.k = k;\n}\n"},
     {"demo.cu"}},
    {"applies_where_the_lines_moved",
     described("plant: k\n") +
         "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -9,5 +9,5 @@\n void k(float* y) {\n   y[0] = 1.0f;\n"
         "-  y[1] = 2.0f;\n+  y[1] = 5.0f;  // planted\n   y[2] = 3.0f;\n }\n",
     0,
     {},
     {"  y[1] = 5.0f;  // planted\n"},
     {"demo.cu"}},
    {"as_git_diff_writes_it",
     described("plant: k\n") + "diff --git a/kernels/k.cu b/kernels/k.cu\nindex 0123456..89abcde 100644\n" +
         kPlantedHunk,
     0,
     {},
     {"// plant: k\nnamespace DSK_NS {"},
     {"demo.cu"}},
    {"plants_every_entry_it_names",
     described("plant: k k_other\n") + kPlantedHunk,
     0,
     {},
     {"  t.k = k;\n  t.k_other = k_other;\n"},
     {"demo.cu"}},
    {"patched_header_beside_the_kernel_file",
     described("kernel: kernels/k.cu\nplant: k\n") +
         "--- a/kernels/common.cuh\n+++ b/kernels/common.cuh\n@@ -1,4 +1,4 @@\n #pragma once\n"
         " inline float half_of(float v) {\n-  return v / 2.0f;\n+  return v / 3.0f;  // planted\n }\n",
     0,
     {},
     {"  y[1] = 2.0f;\n"},
     {"common.cuh", "demo.cu"}},
    {"does_not_apply",
     described("plant: k\n") +
         "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -4,5 +4,5 @@\n void k(float* y) {\n   y[0] = 1.0f;\n"
         "-  y[1] = 4.0f;\n+  y[1] = 5.0f;  // planted\n   y[2] = 3.0f;\n }\n",
     1,
     {"mutant demo (", "demo.patch): the patch no longer applies to the production code (kernels/k.cu)",
      "Hunk #1 FAILED"},
     {},
     {}},
    {"already_in_the_production_file",
     described("plant: k\n") +
         "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -4,5 +4,5 @@\n void k(float* y) {\n   y[0] = 1.0f;\n"
         "-  y[1] = 0.0f;\n+  y[1] = 2.0f;\n   y[2] = 3.0f;\n }\n",
     1,
     {"demo.patch): the patch no longer applies", "Reversed (or previously applied) patch detected"},
     {},
     {}},
    {"against_a_missing_file",
     described("plant: k\n") + "--- a/kernels/gone.cu\n+++ b/kernels/gone.cu\n@@ -1,1 +1,1 @@\n-x\n+y\n",
     1,
     {"demo.patch): kernels/gone.cu, a production file it names, does not exist"},
     {},
     {}},
    {"without_a_plant_line", described("") + kPlantedHunk, 1, {"demo.patch): no `plant:` line"}, {}, {}},
    {"without_a_description", kPlantedHunk, 1, {"demo.patch): no description before the diff"}, {}, {}},
    {"headers_only_without_a_kernel_line",
     described("plant: k\n") +
         "--- a/kernels/common.cuh\n+++ b/kernels/common.cuh\n@@ -3,1 +3,1 @@\n-  return v / 2.0f;\n"
         "+  return v / 3.0f;\n",
     1,
     {"demo.patch): it patches 0 .cu files", "`kernel:`"},
     {},
     {}},
    {"paths_without_git_prefixes",
     described("plant: k\n") + "--- kernels/k.cu\n+++ kernels/k.cu\n@@ -6,1 +6,1 @@\n-  y[1] = 2.0f;\n"
                               "+  y[1] = 5.0f;\n",
     1,
     {"demo.patch): `+++ kernels/k.cu`: name the file from the repository root with git's a/ and b/"},
     {},
     {}},
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// The generator's exit code and its output (stdout and stderr).
std::pair<int, std::string> generate(const fs::path& repo, const fs::path& out_dir) {
  const std::string cmd = std::string("'") + DS_CMAKE_COMMAND + "' -DMUTANT=demo -DPATCH='" +
                          (repo / "kernels/mutants/demo.patch").string() + "' -DSOURCE_DIR='" +
                          repo.string() + "' -DOUT_DIR='" + out_dir.string() + "' -DPATCH_PROGRAM='" +
                          DS_PATCH_PROGRAM + "' -P '" + DS_MAKE_MUTANT + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed: " + cmd};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class MutantPatch : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : test)
      if (c == '/') c = '_';
    repo_ = fs::temp_directory_path() / ("ds-mutant-" + std::to_string(::getpid()) + "-" + test);
    fs::remove_all(repo_);
    write(repo_ / "kernels/k.cu", kKernel);
    write(repo_ / "kernels/common.cuh", kHeader);
  }
  void TearDown() override { fs::remove_all(repo_); }
  fs::path repo_;
};

TEST_P(MutantPatch, GeneratesTheMutantOrNamesItsPatch) {
  const Case& c = GetParam();
  write(repo_ / "kernels/mutants/demo.patch", c.patch);
  const fs::path out_dir = repo_ / "build/demo";
  const auto [code, said] = generate(repo_, out_dir);
  if (c.exit_code == 0)
    EXPECT_EQ(code, 0) << said;
  else
    EXPECT_NE(code, 0) << said;
  // CMake wraps its messages: compare them unwrapped.
  std::string flat;
  std::istringstream lines(said);
  for (std::string line; std::getline(lines, line);) {
    const auto from = line.find_first_not_of(' ');
    if (from == std::string::npos) continue;
    if (!flat.empty()) flat += ' ';
    flat += line.substr(from);
  }
  for (const std::string& s : c.says) EXPECT_NE(flat.find(s), std::string::npos) << s << "\nin: " << flat;
  const std::string generated = read(out_dir / "demo.cu");
  for (const std::string& s : c.generated)
    EXPECT_NE(generated.find(s), std::string::npos) << s << "\nin:\n" << generated;
  std::vector<std::string> files;
  if (fs::exists(out_dir))
    for (const auto& e : fs::directory_iterator(out_dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, c.files);
  // The production tree is read, never written.
  EXPECT_EQ(read(repo_ / "kernels/k.cu"), kKernel);
  EXPECT_EQ(read(repo_ / "kernels/common.cuh"), kHeader);
}

INSTANTIATE_TEST_SUITE_P(Table, MutantPatch, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// A header the patch no longer changes leaves the output folder, where it would still be found first.
TEST(MutantPatchOutput, AHeaderThePatchNoLongerChangesIsRemoved) {
  const fs::path repo = fs::temp_directory_path() / ("ds-mutant-stale-" + std::to_string(::getpid()));
  fs::remove_all(repo);
  write(repo / "kernels/k.cu", kKernel);
  write(repo / "kernels/common.cuh", kHeader);
  const fs::path out_dir = repo / "build/demo";
  write(out_dir / "common.cuh", "// a patched copy a previous version of the patch wrote\n");
  write(repo / "kernels/mutants/demo.patch", described("plant: k\n") + kPlantedHunk);
  const auto [code, said] = generate(repo, out_dir);
  EXPECT_EQ(code, 0) << said;
  EXPECT_TRUE(fs::exists(out_dir / "demo.cu"));
  EXPECT_FALSE(fs::exists(out_dir / "common.cuh"));
  fs::remove_all(repo);
}

}  // namespace
