// What every synccheck test kernel's host code shares.
#pragma once

#include <cuda_runtime.h>

#include <string>

#define SYNC_CUDA(call)                                                   \
  do {                                                                    \
    cudaError_t err_ = (call);                                            \
    if (err_ != cudaSuccess) throw std::string(cudaGetErrorString(err_)); \
  } while (0)
