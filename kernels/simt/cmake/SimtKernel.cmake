# driftscope_add_simt_kernel(<target> SOURCES a.cu [b.cu ...] [LINK libs...])
#
# Builds the same .cu sources two ways:
#   <target>       STATIC library compiled by the host compiler against the SIMT CPU runtime
#                  (driftscope::simt): every CUDA thread a fiber, on any machine;
#   <target>_nvcc  OBJECT library compiled by nvcc for CMAKE_CUDA_ARCHITECTURES, and
#   <target>_cuda  STATIC library of those objects with the CUDA runtime, both only when the
#                  CUDA language is enabled in the calling project (enable_language(CUDA)).
# Used inside Driftscope for kernels/ and, installed, by outside projects (find_package).
# The host build goes through generated one-line .cpp files that #include the .cu: marking the
# .cu itself LANGUAGE CXX is per directory and would also change the nvcc target.
function(driftscope_add_simt_kernel target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "driftscope_add_simt_kernel(${target}): SOURCES is required")
  endif()
  set(wrappers "")
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(stem "${src}" NAME_WE)
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_simt/${stem}.simt.cpp")
    file(CONFIGURE OUTPUT "${out}" CONTENT "#include \"${abs}\"\n" @ONLY)
    list(APPEND wrappers "${out}")
  endforeach()
  add_library(${target} STATIC ${wrappers})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(${target} PUBLIC driftscope::simt ${ARG_LINK})
  if(TARGET driftscope_warnings)
    target_link_libraries(${target} PRIVATE driftscope_warnings)
  endif()
  if(CMAKE_CUDA_COMPILER_LOADED)
    add_library(${target}_nvcc OBJECT ${ARG_SOURCES})
    target_include_directories(${target}_nvcc PRIVATE $<TARGET_PROPERTY:driftscope::simt,INTERFACE_INCLUDE_DIRECTORIES>)
    # CMake 3.25 knows no CUDA20 dialect flag for nvcc, so kernels are C++17 under nvcc.
    set_target_properties(${target}_nvcc PROPERTIES
      CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CUDA_STANDARD 17 POSITION_INDEPENDENT_CODE ON)
    foreach(lib IN LISTS ARG_LINK)
      if(TARGET ${lib})
        target_include_directories(${target}_nvcc PRIVATE $<TARGET_PROPERTY:${lib},INTERFACE_INCLUDE_DIRECTORIES>)
      endif()
    endforeach()
    if(NOT TARGET CUDA::cudart_static)
      find_package(CUDAToolkit REQUIRED)
    endif()
    add_library(${target}_cuda STATIC $<TARGET_OBJECTS:${target}_nvcc>)
    target_link_libraries(${target}_cuda PUBLIC CUDA::cudart_static ${ARG_LINK})
    set_target_properties(${target}_cuda PROPERTIES LINKER_LANGUAGE CXX POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()
