// The SIMT runtime's stand-in for the toolkit's <cublas_v2.h>, on the CPU only: the real header's
// declarations, then its GEMM calls redirected to the CPU's (simt/cublas_host.h). A system header
// so that #include_next is not a pedantic warning in the kernel file's build.
#pragma once
#pragma GCC system_header
#include_next <cublas_v2.h>

#include "simt/cublas_host.h"
