// The build step of driftscope_add_simt_kernel() (kernels/simt/tools/cuda_rewrite.h): what it
// rewrites, what it leaves alone, and that every line of the author's file keeps its number.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cuda_rewrite.h"

namespace simt_test {
namespace {

struct RewriteCase {
  const char* name;
  const char* source;
  const char* expected;       // the output after its three header lines
  bool access_hooks = false;  // the checked flavour's rewrite (Input::access_hooks)
};
void PrintTo(const RewriteCase& c, std::ostream* os) { *os << c.name; }

const RewriteCase kRewriteCases[] = {
    {"launch", "void f() { k<<<1, 32>>>(a, b); }\n",
     "void f() { ::simt::detail::Chevron(SIMT_SITE, 1, 32).args(a, b)(k); }\n"},
    {"launch_with_smem_stream_and_no_args", "k<<<g, b, smem, s>>>();\n",
     "::simt::detail::Chevron(SIMT_SITE, g, b, smem, s).args()(k);\n"},
    {"qualified_template_kernel", "  ns::k<float, 4><<<dim3(n >> 1), 64>>>(x);\n",
     "  ::simt::detail::Chevron(SIMT_SITE, dim3(n >> 1), 64).args(x)(ns::k<float, 4>);\n"},
    {"global_scope_kernel", "  ::k<<<1, 1>>>(x);\n",
     "  ::simt::detail::Chevron(SIMT_SITE, 1, 1).args(x)(::k);\n"},
    {"launch_over_lines_keeps_its_newlines", "k<<<1,\n 32>>>(a,\n b);\nint after;\n",
     "::simt::detail::Chevron(SIMT_SITE, 1,\n 32).args(a,\n b)(k);\nint after;\n"},
    {"chevrons_in_comments_and_strings_stay",
     "// k<<<1, 1>>>();\nconst char* s = \"k<<<1, 1>>>()\"; /* <<< */\n",
     "// k<<<1, 1>>>();\nconst char* s = \"k<<<1, 1>>>()\"; /* <<< */\n"},
    {"raw_string_with_quote_paren", "auto r = R\"re(\"(x)\" k<<<1,1>>>)re\"; int c = 1'000;\n",
     "auto r = R\"re(\"(x)\" k<<<1,1>>>)re\"; int c = 1'000;\n"},
    {"launch_without_a_kernel_name", "(*p)<<<1, 1>>>();\n",
     "(*p), SIMT_UNSUPPORTED(\"simt: a <<<...>>> launch needs a kernel name before it (a function or "
     "function "
     "template, e.g. k or ns::k<float>), not an expression\");\n"},
    {"launch_without_arguments", "void h() { k<<<1, 32>>>; }\n",
     "void h() { k, SIMT_UNSUPPORTED(\"simt: a <<<...>>> launch needs its closing >>> and an argument list "
     "(...)\"); }\n"},
    {"extern_shared_in_a_kernel",
     "__global__ void k() {\n  extern __shared__ __align__(16) float buf[];\n}\n",
     "__global__ void k() {\n  [[maybe_unused]] float* const buf = "
     "static_cast<float*>(::simt::detail::dynamic_shared_of(sizeof(float)));\n}\n"},
    {"extern_shared_of_unsigned_char", "void k() { extern __shared__ unsigned char raw []; }\n",
     "void k() { [[maybe_unused]] unsigned char* const raw = static_cast<unsigned "
     "char*>(::simt::detail::dynamic_shared_of(sizeof(unsigned char))); }\n"},
    {"extern_shared_inside_a_namespace_function",
     "namespace a { namespace b {\nvoid k() { extern __shared__ int s[]; }\n}}\n",
     "namespace a { namespace b {\nvoid k() { [[maybe_unused]] int* const s = "
     "static_cast<int*>(::simt::detail::dynamic_shared_of(sizeof(int))); }\n}}\n"},
    {"extern_shared_at_namespace_scope", "namespace a {\nextern __shared__ float smem[];\n}\n",
     "namespace a {\nstatic_assert(false, \"simt: extern __shared__ smem[] at namespace scope is not "
     "supported on the "
     "CPU: declare it inside the kernel or device function that uses it\");\n}\n"},
    {"extern_shared_with_a_size", "void k() { extern __shared__ float s[32]; }\n",
     "void k() { static_assert(false, \"simt: extern __shared__ must declare one array of unknown size, e.g. "
     "extern "
     "__shared__ float buf[];\"); }\n"},
    {"static_shared_in_a_kernel_is_announced_for_the_poison",
     "__global__ void k() {\n  __shared__ __align__(16) float tile[4][32];\n}\n",
     "__global__ void k() {\n  __shared__ __align__(16) float tile[4][32]; "
     "::simt::detail::static_shared(&tile, sizeof(tile));\n}\n"},
    {"static_shared_scalar", "void k() { __shared__ float inv; }\n",
     "void k() { __shared__ float inv; ::simt::detail::static_shared(&inv, sizeof(inv)); }\n"},
    {"static_shared_of_two_names_stays_as_written", "void k() { __shared__ float a[2], b[2]; }\n",
     "void k() { __shared__ float a[2], b[2]; }\n"},
    {"static_shared_at_namespace_scope_stays", "__shared__ float g[8];\n", "__shared__ float g[8];\n"},
    // The checked flavour reaches a static __shared__ array through a reference its
    // instrumentation cannot see through, declared between memcheck's red zones.
    {"checked_static_shared_is_reached_through_a_reference",
     "__global__ void k() {\n  __shared__ __align__(16) float tile[4][32];\n}\n",
     "__global__ void k() {\n  __shared__ struct { alignas(16) unsigned char "
     "simt_red_zone_before[::simt::detail::kStaticSharedRedZone]; __align__(16) float tile[4][32]; unsigned "
     "char simt_red_zone_after[::simt::detail::kStaticSharedRedZone]; } tile__simt_static; auto& tile = "
     "::simt::detail::watched_static_shared(tile__simt_static.tile);\n}\n",
     true},
    {"checked_static_shared_keeps_the_comment", "void k() { __shared__ float /* inv */ inv; }\n",
     "void k() { __shared__ struct { alignas(16) unsigned char "
     "simt_red_zone_before[::simt::detail::kStaticSharedRedZone]; float /* inv */ inv; unsigned char "
     "simt_red_zone_after[::simt::detail::kStaticSharedRedZone]; } inv__simt_static; auto& inv = "
     "::simt::detail::watched_static_shared(inv__simt_static.inv); }\n",
     true},
    {"checked_static_shared_of_two_names_stays_as_written", "void k() { __shared__ float a[2], b[2]; }\n",
     "void k() { __shared__ float a[2], b[2]; }\n", true},
    // Locals declared without an initializer start as the poison under Config::poison.
    {"uninitialized_local_scalar_and_array", "__global__ void k() {\n  float acc;\n  float v[4][2];\n}\n",
     "__global__ void k() {\n  float acc; ::simt::detail::poison_local(acc, \"acc\", __FILE__, __LINE__);\n  "
     "float v[4][2]; "
     "::simt::detail::poison_local(v, \"v\", __FILE__, __LINE__);\n}\n"},
    {"uninitialized_locals_of_several_names_and_words",
     "void k() { unsigned long long a, b[kN]; __half2 h; }\n",
     "void k() { unsigned long long a, b[kN]; ::simt::detail::poison_local(a, \"a\", __FILE__, __LINE__); "
     "::simt::detail::poison_local(b, \"b\", __FILE__, __LINE__); __half2 h; ::simt::detail::poison_local(h, "
     "\"h\", __FILE__, __LINE__); }\n"},
    {"uninitialized_local_over_lines_keeps_its_newlines", "void k() {\n  float4 lo,\n         hi;\n}\n",
     "void k() {\n  float4 lo,\n         hi; ::simt::detail::poison_local(lo, \"lo\", __FILE__, __LINE__); "
     "::simt::detail::poison_local(hi, \"hi\", __FILE__, __LINE__);\n}\n"},
    {"uninitialized_local_in_a_lambda_body", "void k() { auto f = [&](int i) { float x; return i; }; }\n",
     "void k() { auto f = [&](int i) { float x; ::simt::detail::poison_local(x, \"x\", __FILE__, __LINE__); "
     "return i; }; }\n"},
    {"initialized_pointer_and_loop_locals_stay",
     "void k() { float a = 0.f; float b{1}; float* p; const float c = 2; for (int i; i < 2;) {} "
     "float f(int); int* q, r; T t; }\n",
     "void k() { float a = 0.f; float b{1}; float* p; const float c = 2; for (int i; i < 2;) {} "
     "float f(int); int* q, r; T t; }\n"},
    {"members_and_namespace_variables_stay",
     "template <class W>\nstruct Row {\n  int rows, row;\n};\nstruct __align__(8) P { float x; };\n"
     "float g;\nvoid k() { struct L { float y; }; union { int i; float f; } u; }\n",
     "template <class W>\nstruct Row {\n  int rows, row;\n};\nstruct __align__(8) P { float x; };\n"
     "float g;\nvoid k() { struct L { float y; }; union { int i; float f; } u; }\n"},
    {"extern_c_block_stays", "extern \"C\" {\nint f();\n}\n", "extern \"C\" {\nint f();\n}\n"},
    {"shuffle_loop_fused_into_one_collective",
     "void k() { for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o); }\n",
     "void k() { { ::simt::detail::FoldSteps simt_fold_steps_; SIMT_FOLD_UNROLL for (int o = 16; o > 0; o "
     ">>= 1) "
     "simt_fold_steps_.add(0xffffffffu, o); auto simt_fold_body_ = [&](auto& simt_x_, const auto& simt_s_) "
     "SIMT_RUNTIME_MEMORY_ONLY { "
     "simt_x_ += simt_s_; }; if (simt_fold_steps_.fusable()) acc = "
     "::simt::detail::shfl_fold<::simt::detail::Coll::shfl_xor>(SIMT_SITE, simt_fold_steps_, acc, "
     "simt_fold_body_); else for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o); } "
     "}\n"},
    {"braced_shuffle_loop_over_lines_keeps_its_newlines",
     "void k() {\n  for (int o = 16; o; o /= 2) {\n    v = fmaxf(v,\n              __shfl_down_sync(m, v, o, "
     "16));\n  }\n}\n",
     "void k() {\n  { ::simt::detail::FoldSteps simt_fold_steps_; SIMT_FOLD_UNROLL for (int o = 16; o; o /= "
     "2) "
     "simt_fold_steps_.add(m, o, 16); auto simt_fold_body_ = [&](auto& simt_x_, const auto& simt_s_) "
     "SIMT_RUNTIME_MEMORY_ONLY { "
     "simt_x_ = fmaxf(simt_x_,               simt_s_); }; if (simt_fold_steps_.fusable()) v = "
     "::simt::detail::shfl_fold<::simt::detail::Coll::shfl_down>(SIMT_SITE, simt_fold_steps_, v, "
     "simt_fold_body_); else for (int o = 16; o; o /= 2) {\n    v = fmaxf(v,\n              "
     "__shfl_down_sync(m, v, o, 16));\n  } }\n}\n"},
    {"shuffle_loops_that_are_not_a_fold_stay",
     "void k() { for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(m, other, o); for (o = 16; o > 0; o "
     ">>= 1) acc += __shfl_xor_sync(m, acc, o); for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(m, "
     "acc, o) * 2.0f; for (int o = 16; o > 0 && acc > 0; o >>= 1) acc += __shfl_xor_sync(m, acc, o); for "
     "(int o = 16; o > 0; o >>= 1) { acc += __shfl_xor_sync(m, acc, o); n++; } for (int o = 16; o > 0; o >>= "
     "1) acc += __shfl_xor_sync(m, acc, o + (int)acc); }\n",
     "void k() { for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(m, other, o); for (o = 16; o > 0; o "
     ">>= 1) acc += __shfl_xor_sync(m, acc, o); for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(m, "
     "acc, o) * 2.0f; for (int o = 16; o > 0 && acc > 0; o >>= 1) acc += __shfl_xor_sync(m, acc, o); for "
     "(int o = 16; o > 0; o >>= 1) { acc += __shfl_xor_sync(m, acc, o); n++; } for (int o = 16; o > 0; o >>= "
     "1) acc += __shfl_xor_sync(m, acc, o + (int)acc); }\n"},
    {"shuffle_loops_calling_functions_stay_but_casts_and_sizeof_are_fused",
     "void k() { for (int o = first(); o > 0; o >>= 1) acc += __shfl_xor_sync(m, acc, o); for (int o = 16; o "
     "> 0; o >>= 1) acc += __shfl_xor_sync(__activemask(), acc, o); for (int o = 16; o > 0; o >>= 1) acc += "
     "__shfl_xor_sync(m, acc, o, width_of(o)); for (int o = sizeof(float) * 4; o > 0; o >>= 1) acc += "
     "__shfl_xor_sync(m, acc, static_cast<int>(o)); }\n",
     "void k() { for (int o = first(); o > 0; o >>= 1) acc += __shfl_xor_sync(m, acc, o); for (int o = 16; o "
     "> 0; o >>= 1) acc += __shfl_xor_sync(__activemask(), acc, o); for (int o = 16; o > 0; o >>= 1) acc += "
     "__shfl_xor_sync(m, acc, o, width_of(o)); { ::simt::detail::FoldSteps simt_fold_steps_; "
     "SIMT_FOLD_UNROLL for (int o = "
     "sizeof(float) * 4; o > 0; o >>= 1) simt_fold_steps_.add(m, static_cast<int>(o)); auto simt_fold_body_ "
     "= [&](auto& simt_x_, const auto& simt_s_) SIMT_RUNTIME_MEMORY_ONLY { simt_x_ += simt_s_; }; if "
     "(simt_fold_steps_.fusable()) acc "
     "= ::simt::detail::shfl_fold<::simt::detail::Coll::shfl_xor>(SIMT_SITE, simt_fold_steps_, acc, "
     "simt_fold_body_); else for (int o = sizeof(float) * 4; o > 0; o >>= 1) acc += __shfl_xor_sync(m, acc, "
     "static_cast<int>(o)); } }\n"},
    {"shuffle_loops_folding_shared_or_device_variables_stay",
     "__device__ float total;\nvoid k() {\n  __shared__ float s;\n  for (int o = 16; o > 0; o >>= 1) s += "
     "__shfl_xor_sync(m, s, o);\n  for (int o = 16; o > 0; o >>= 1) total = fmaxf(total, __shfl_xor_sync(m, "
     "total, o));\n}\n",
     "__device__ float total;\nvoid k() {\n  __shared__ float s; ::simt::detail::static_shared(&s, "
     "sizeof(s));\n  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(m, s, o);\n  for (int o = 16; o > "
     "0; o >>= 1) total = fmaxf(total, __shfl_xor_sync(m, total, o));\n}\n"},
    {"assert_names_its_line_static_assert_stays", "assert(i < n); static_assert(sizeof(int) == 4);\n",
     "SIMT_ASSERT(i < n); static_assert(sizeof(int) == 4);\n"},
    {"pragma_unroll_becomes_a_comment", "  #pragma unroll 4\nfor (;;) {}\n",
     "  // #pragma unroll 4  (simt: no unrolling hint on the CPU)\nfor (;;) {}\n"},
    {"local_include_made_absolute",
     "#include \"common.cuh\" // helpers\n#include \"missing.h\"\n#include <cuda.h>\n",
     "#include \"/src/kernels/common.cuh\" // helpers\n#include \"missing.h\"\n#include <cuda.h>\n"},
};

class CudaRewrite : public testing::TestWithParam<RewriteCase> {};

TEST_P(CudaRewrite, RewritesOnlyItsConstructsAndKeepsEveryLine) {
  const RewriteCase& c = GetParam();
  const std::string out = simt::rewrite::rewrite_cuda_source(
      {c.source, "/src/kernels/my kernel.cu",
       [](const std::string& p) { return p == "/src/kernels/common.cuh"; }, c.access_hooks});
  const std::string header =
      "// Generated by driftscope-simt-rewrite from /src/kernels/my kernel.cu: edit that file, not this "
      "one.\n"
      "#include \"simt/simt_cuda.h\"\n#line 1 \"/src/kernels/my kernel.cu\"\n";
  ASSERT_EQ(out.substr(0, header.size()), header);
  const std::string body = out.substr(header.size());
  EXPECT_EQ(body, c.expected);
  const std::string src = c.source;
  EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), std::count(src.begin(), src.end(), '\n'))
      << "every line after the rewrite must keep its number";
}

INSTANTIATE_TEST_SUITE_P(Table, CudaRewrite, testing::ValuesIn(kRewriteCases),
                         [](const testing::TestParamInfo<RewriteCase>& i) {
                           return std::string(i.param.name);
                         });

// Quoted includes of files that hold CUDA only the rewrite makes C++ (an included .cu, a header with
// a launch) are rewritten in place between #line directives, each file keeping its own name and
// lines; other quoted includes stay includes. A small file system stands in for the disk.
struct IncludeCase {
  const char* name;
  std::map<std::string, std::string> files;  // path -> text; the rewritten file is /src/w.cu
  const char* expected;                      // the output after the three header lines
  std::vector<std::string> inlined;
};
void PrintTo(const IncludeCase& c, std::ostream* os) { *os << c.name; }

const IncludeCase kIncludeCases[] = {
    {"included_cu_rewritten_in_place",
     {{"/src/w.cu", "#include \"lib/k.cu\"\nvoid w() { run(); }\n"},
      {"/src/lib/k.cu", "#include \"common.h\"\nvoid run() { k<<<1, 32>>>(x); }\nint main() { return 0; }"},
      {"/src/lib/common.h", "int helper();\n"}},
     "#line 1 \"/src/lib/k.cu\"\n#include \"/src/lib/common.h\"\n"
     "void run() { ::simt::detail::Chevron(SIMT_SITE, 1, 32).args(x)(k); }\nint main() { return 0; }\n"
     "#line 2 \"/src/w.cu\"\nvoid w() { run(); }\n",
     {"/src/lib/k.cu"}},
    {"header_with_a_launch_in_place_header_without_stays",
     {{"/src/w.cu", "int a;\n#include \"plain.cuh\"\n#include \"launch.cuh\"\nint b;\n"},
      {"/src/plain.cuh", "__device__ int f();\n"},
      {"/src/launch.cuh", "inline void go() { k<<<1, 1>>>(); }\n"}},
     "int a;\n#include \"/src/plain.cuh\"\n#line 1 \"/src/launch.cuh\"\n"
     "inline void go() { ::simt::detail::Chevron(SIMT_SITE, 1, 1).args()(k); }\n#line 4 \"/src/w.cu\"\nint "
     "b;\n",
     {"/src/launch.cuh"}},
    {"pragma_once_header_in_place_once",
     {{"/src/w.cu", "#include \"o.cuh\"\n#include \"o.cuh\"\n"},
      {"/src/o.cuh", "#pragma once\n__global__ void k() { __shared__ float s[4]; }\n"}},
     "#line 1 \"/src/o.cuh\"\n// #pragma once  (simt: rewritten in place, and only once)\n"
     "__global__ void k() { __shared__ float s[4]; ::simt::detail::static_shared(&s, sizeof(s)); }\n"
     "#line 2 \"/src/w.cu\"\n"
     "// #include \"/src/o.cuh\"  (simt: rewritten in place above; it says #pragma once)\n",
     {"/src/o.cuh"}},
    {"cu_including_itself_is_an_error",
     {{"/src/w.cu", "#include \"a.cu\"\n"}, {"/src/a.cu", "#include \"../src/w.cu\"\n"}},
     "#line 1 \"/src/a.cu\"\n#error \"simt: /src/w.cu is included inside itself (or more than 32 deep): the "
     "rewrite puts each included .cu in place\"\n#line 2 \"/src/w.cu\"\n",
     {"/src/a.cu"}},
};

class CudaRewriteIncludes : public testing::TestWithParam<IncludeCase> {};

TEST_P(CudaRewriteIncludes, RewritesIncludedCudaInPlace) {
  const IncludeCase& c = GetParam();
  std::vector<std::string> inlined;
  const std::string out = simt::rewrite::rewrite_cuda_source(
      {c.files.at("/src/w.cu"), "/src/w.cu", [&](const std::string& p) { return c.files.contains(p); }, false,
       [&](const std::string& p) -> std::optional<std::string> {
         const auto it = c.files.find(p);
         return it == c.files.end() ? std::nullopt : std::optional<std::string>(it->second);
       }},
      &inlined);
  const std::size_t header_end = out.find("#line 1 \"/src/w.cu\"\n");
  ASSERT_NE(header_end, std::string::npos) << out;
  EXPECT_EQ(out.substr(header_end + std::string("#line 1 \"/src/w.cu\"\n").size()), c.expected);
  EXPECT_EQ(inlined, c.inlined);
}

INSTANTIATE_TEST_SUITE_P(Table, CudaRewriteIncludes, testing::ValuesIn(kIncludeCases),
                         [](const testing::TestParamInfo<IncludeCase>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace simt_test
