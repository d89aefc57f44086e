// The SIMT runtime's stand-in for the toolkit's <cublasLt.h>, on the CPU only: the real header's
// declarations, then its matmul calls redirected to the CPU's (simt/cublaslt_host.h).
#pragma once
#pragma GCC system_header
#include_next <cublasLt.h>

#include "simt/cublaslt_host.h"
