// The helpers a kernel repository keeps next to its kernel files (written here): an error check
// that exits, as such files do, and (from its include directory) a ceiling division.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "repo_math.h"

inline void cuda_check(cudaError_t error, const char* file, int line) {
  if (error != cudaSuccess) {
    std::printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
    std::exit(EXIT_FAILURE);
  }
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))
