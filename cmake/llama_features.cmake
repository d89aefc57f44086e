# What the installed llama.cpp's llama.h offers, for tools/llama_dump. Each check only compiles
# (a static library, never linked): the question is what the header declares, and a link would
# need libllama, libggml and their own dependencies on the check's command line, so a check that
# links fails on every real install and the dumper would pick the wrong spelling.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

# ds_llama_features(INCLUDES...): sets DS_LLAMA_HAS_FLASH_ATTN_TYPE (cached, as CMake's checks are).
# llama.cpp replaced `bool flash_attn` by `enum llama_flash_attn_type flash_attn_type` (with an
# automatic choice) in mid 2025.
function(ds_llama_features)
  set(CMAKE_REQUIRED_INCLUDES ${ARGN})
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  check_cxx_source_compiles([=[
#include <llama.h>
int probe() { llama_context_params p = llama_context_default_params(); p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO; return 0; }
]=] DS_LLAMA_HAS_FLASH_ATTN_TYPE)
endfunction()
