// The source step of driftscope_add_simt_kernel(): a .cu written for nvcc, rewritten into a C++
// translation unit the SIMT CPU runtime compiles, with the author's file left untouched and every
// line number kept (a #line directive, and each rewrite keeps its newlines).
//
// Rewritten, and only these:
//   kernel<<<grid, block[, smem[, stream]]>>>(args)  -> a simt launch (simt/simt_cuda.h)
//   extern __shared__ [__align__(n)] T name[];        -> the block's dynamic shared memory
//   #include "local.cuh"                              -> the same file by its absolute path (the
//                                                        generated file lives in the build tree)
//   #include "other.cu" (or a header with a launch    -> that file, rewritten the same way, in
//     or extern __shared__ in it)                        place between #line directives: a wrapper
//                                                        can include a repository's kernel file as is
//   #pragma unroll [N]                                -> a comment (g++ has no such pragma)
//   assert(e)                                         -> SIMT_ASSERT(e): in a kernel a finding with
//                                                        its line and thread (simt_cuda.h)
//   __shared__ T name[N]; in a function               -> kept, announced to the runtime (poison)
//   for (int o = 16; o > 0; o >>= 1)                  -> one fused collective (shuffle_loop.h),
//     acc += __shfl_xor_sync(mask, acc, o);              the loop kept as its fallback
//   float acc; float v[4]; in a function body         -> kept, then ::simt::detail::poison_local
//     (arithmetic, half/bfloat16 and CUDA vector types without an initializer: under
//     Config::poison they start as the poison, so verify sees a read before the first write)
// A construct the runtime cannot take becomes a compile-time error naming it, at its line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simt::rewrite {

struct Input {
  std::string_view source;
  std::string path;  // absolute path of the .cu: #line, and where quoted includes are resolved
  // Whether a file exists (quoted includes are rewritten only when they resolve next to the .cu).
  std::function<bool(const std::string&)> file_exists;
  // For the checked flavour (access hooks): a static __shared__ array is reached through a
  // reference the compiler cannot see through, so its instrumentation checks every access (it
  // skips accesses to a named static variable at a constant index).
  bool access_hooks = false;
  // Reads a quoted include's text, so that one holding CUDA to rewrite is rewritten in place (an
  // included .cu); without it every quoted include stays an #include.
  std::function<std::optional<std::string>(const std::string&)> read_file;
};

// `inlined`, when given, receives the files rewritten into the result (a build's dependencies).
std::string rewrite_cuda_source(const Input& in, std::vector<std::string>* inlined = nullptr);

}  // namespace simt::rewrite
