// The helpers a kernel repository keeps next to its kernel files (written here): an error check
// that exits, as such files do, and a ceiling division.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

inline void cuda_check(cudaError_t error, const char* file, int line) {
  if (error != cudaSuccess) {
    std::printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
    std::exit(EXIT_FAILURE);
  }
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
