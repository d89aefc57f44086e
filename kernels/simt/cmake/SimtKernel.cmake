# driftscope_add_simt_kernel(<target> SOURCES a.cu [b.cu ...] [LINK libs...] [NO_LINE_INFO] [CHECKED])
#
# Builds the same .cu sources two ways:
#   <target>       STATIC library compiled by the host compiler against the SIMT CPU runtime
#                  (driftscope::simt): every CUDA thread a fiber, on any machine;
#   <target>_nvcc  OBJECT library compiled by nvcc for CMAKE_CUDA_ARCHITECTURES, and
#   <target>_cuda  STATIC library of those objects with the CUDA runtime, both only when the
#                  CUDA language is enabled in the calling project (enable_language(CUDA)) and
#                  the CUDA toolkit's runtime library is found.
#   <target>_checked  with CHECKED: the host build again, every load and store checked inline
#                  against a shadow (AddressSanitizer's instrumentation, linked without its
#                  runtime: the SIMT runtime defines its functions) so that the hazard checker
#                  (Config::racecheck) sees each access to the memory it watches through a call.
#                  A module links one of <target> and <target>_checked (both define the same
#                  kernels); <target> is unchanged by it. x86-64 GCC/Clang only, and not in a build
#                  that already sanitizes (then no <target>_checked target exists).
# Both are built with debug line info in every build type (-g for the host compiler, -lineinfo
# for nvcc): the hazard checker and race reports then name the kernel's file:line instead of
# lib.so+0x..., and the generated code is the same. NO_LINE_INFO leaves it to the build type.
# Under nvcc the kernels are C++17 (CMAKE_CUDA_STANDARD overrides): CMake 3.25 knows no CUDA20
# dialect flag for nvcc, and without an explicit CUDA_STANDARD a target holding CUDA objects
# inherits its CXX_STANDARD (20) as a CUDA dialect, which the Makefile generators then refuse.
# Used inside Driftscope for kernels/ and, installed, by outside projects (find_package).
# The host build compiles a C++ file generated from each .cu at build time by
# driftscope-simt-rewrite (driftscope::simt_rewrite): the .cu as written for nvcc, with its
# kernel<<<...>>>(...) launches and extern __shared__ arrays turned into the runtime's, its quoted
# includes made absolute, and a #line directive so every diagnostic, hazard report and debug line
# names the .cu and its own line numbers. The .cu itself is never written. (Marking the .cu
# LANGUAGE CXX instead is per directory and would also change the nvcc target.) The generated
# files see simt/cuda_compat/ first on their include path: the CPU's <cooperative_groups.h>.
function(driftscope_add_simt_kernel target)
  cmake_parse_arguments(ARG "NO_LINE_INFO;CHECKED" "" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "driftscope_add_simt_kernel(${target}): SOURCES is required")
  endif()
  # In the source tree the tool is built here (a file-level dependency on the target reruns the
  # step when it changes); installed, it is an imported executable.
  get_target_property(rewrite_tool driftscope::simt_rewrite ALIASED_TARGET)
  if(NOT rewrite_tool)
    set(rewrite_tool "$<TARGET_FILE:driftscope::simt_rewrite>")
  endif()
  set(wrappers "")
  set(checked_wrappers "")
  set(abs_sources "")
  set(depfiles "")
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    string(APPEND abs_sources "${abs}|")
    get_filename_component(stem "${src}" NAME_WE)
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_simt/${stem}.simt.cpp")
    # The depfile lists the .cu files the rewrite puts in place of their #include (a wrapper that
    # includes a repository's kernel file): an edit to one reruns the step.
    add_custom_command(OUTPUT "${out}"
      COMMAND "$<TARGET_FILE:driftscope::simt_rewrite>" --depfile "${out}.d" "${abs}" "${out}"
      DEPENDS "${abs}" ${rewrite_tool}
      DEPFILE "${out}.d"
      COMMENT "SIMT: ${src} for the CPU runtime"
      VERBATIM)
    string(APPEND depfiles "${out}.d|")
    list(APPEND wrappers "${out}")
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_simt/${stem}.simt_checked.cpp")
    add_custom_command(OUTPUT "${out}"
      COMMAND "$<TARGET_FILE:driftscope::simt_rewrite>" --access-hooks --depfile "${out}.d" "${abs}" "${out}"
      DEPENDS "${abs}" ${rewrite_tool}
      DEPFILE "${out}.d"
      COMMENT "SIMT: ${src} for the CPU runtime, checked flavour"
      VERBATIM)
    list(APPEND checked_wrappers "${out}")
  endforeach()
  # The checked flavour is ASan's instrumentation without its runtime: not in a build that already
  # sanitizes (the asan and fuzz presets), nor with a compiler other than GCC or Clang on x86-64.
  if(ARG_CHECKED AND (CMAKE_CXX_FLAGS MATCHES "-fsanitize" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang"
                      OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64"))
    message(STATUS "driftscope_add_simt_kernel(${target}): no ${target}_checked in this build "
      "(a sanitizer build, or not GCC/Clang on x86-64)")
    set(ARG_CHECKED OFF)
  endif()
  set(host_targets ${target})
  if(ARG_CHECKED)
    list(APPEND host_targets ${target}_checked)
  endif()
  foreach(host_target IN LISTS host_targets)
    if(host_target STREQUAL target)
      add_library(${host_target} STATIC ${wrappers})
      # Every CUDA-family function the files call and the runtime lacks, all at once, at build time
      # (SimtUndefined.cmake), instead of a module that fails to load naming one.
      if(CMAKE_NM)
        add_custom_command(TARGET ${target} POST_BUILD
          COMMAND "${CMAKE_COMMAND}" "-DNM=${CMAKE_NM}" "-DKERNEL_LIB=$<TARGET_FILE:${target}>"
            "-DRUNTIME_LIB=$<TARGET_FILE:driftscope::simt>" "-DSOURCES=${abs_sources}"
            "-DDEPFILES=${depfiles}" "-DTARGET=${target}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/SimtUndefined.cmake"
          VERBATIM)
      endif()
    else()
      add_library(${host_target} STATIC ${checked_wrappers})
    endif()
    target_include_directories(${host_target} BEFORE PRIVATE
      $<TARGET_PROPERTY:driftscope::simt_cuda_compat,INTERFACE_INCLUDE_DIRECTORIES>)
    set_target_properties(${host_target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${host_target} PUBLIC driftscope::simt ${ARG_LINK})
    if(TARGET driftscope_warnings)
      target_link_libraries(${host_target} PRIVATE driftscope_warnings)
    endif()
    if(NOT ARG_NO_LINE_INFO AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      target_compile_options(${host_target} PRIVATE -g)
    endif()
  endforeach()
  if(ARG_CHECKED)
    # AddressSanitizer's inline access checks without its runtime (the SIMT runtime's
    # src/access_hooks.cpp stands in): every load and store reads a shadow byte and calls a hook
    # only for memory the hazard checker watches. No stack or global redzones, no use-after-scope
    # poisoning: nothing but the checks. The hooks return, so -fsanitize-recover.
    target_compile_definitions(${target}_checked PRIVATE SIMT_ACCESS_HOOKS=1)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target}_checked PRIVATE -fsanitize=address -fsanitize-recover=address
        --param=asan-stack=0 --param=asan-globals=0 --param=asan-use-after-return=0
        --param=asan-instrument-allocas=0 -fno-sanitize-address-use-after-scope)
    elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      target_compile_options(${target}_checked PRIVATE -fsanitize=address -fsanitize-recover=address
        -fno-sanitize-address-use-after-scope "SHELL:-mllvm -asan-stack=0" "SHELL:-mllvm -asan-globals=0"
        "SHELL:-mllvm -asan-use-after-return=never" "SHELL:-mllvm -asan-instrument-dynamic-allocas=0")
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER_LOADED AND NOT TARGET CUDA::cudart_static)
    find_package(CUDAToolkit QUIET)
    if(NOT TARGET CUDA::cudart_static)
      message(STATUS "driftscope_add_simt_kernel(${target}): nvcc is enabled but the CUDA runtime library "
        "was not found (FindCUDAToolkit); building ${target} for the CPU only")
    endif()
  endif()
  if(DEFINED CMAKE_CUDA_STANDARD)
    set(cuda_standard ${CMAKE_CUDA_STANDARD})
  else()
    set(cuda_standard 17)
  endif()
  if(CMAKE_CUDA_COMPILER_LOADED AND TARGET CUDA::cudart_static)
    add_library(${target}_nvcc OBJECT ${ARG_SOURCES})
    target_include_directories(${target}_nvcc PRIVATE $<TARGET_PROPERTY:driftscope::simt,INTERFACE_INCLUDE_DIRECTORIES>)
    set_target_properties(${target}_nvcc PROPERTIES
      CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CUDA_STANDARD ${cuda_standard} POSITION_INDEPENDENT_CODE ON)
    if(NOT ARG_NO_LINE_INFO)
      target_compile_options(${target}_nvcc PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    endif()
    foreach(lib IN LISTS ARG_LINK)
      if(TARGET ${lib})
        target_include_directories(${target}_nvcc PRIVATE $<TARGET_PROPERTY:${lib},INTERFACE_INCLUDE_DIRECTORIES>)
      endif()
    endforeach()
    add_library(${target}_cuda STATIC $<TARGET_OBJECTS:${target}_nvcc>)
    target_link_libraries(${target}_cuda PUBLIC CUDA::cudart_static ${ARG_LINK})
    set_target_properties(${target}_cuda PROPERTIES
      CUDA_STANDARD ${cuda_standard} LINKER_LANGUAGE CXX POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()
