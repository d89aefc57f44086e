# driftscope_add_simt_kernel(<target> SOURCES a.cu [b.cu ...] [LINK libs...])
#
# Builds the same .cu sources two ways:
#   <target>       STATIC library compiled by the host compiler against the SIMT
#                  CPU runtime (link this into tests / tools that run kernels);
#   <target>_nvcc  OBJECT library compiled by nvcc for CMAKE_CUDA_ARCHITECTURES
#                  (only when DRIFTSCOPE_HAVE_CUDA), part of the default build so
#                  every .cu is known to compile with nvcc.
# The host build goes through generated one-line .cpp files that #include the
# .cu: marking the .cu itself LANGUAGE CXX is per directory and would also
# change the nvcc target.
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
  target_link_libraries(${target} PUBLIC driftscope_simt ${ARG_LINK} PRIVATE driftscope_warnings)
  if(DRIFTSCOPE_HAVE_CUDA)
    add_library(${target}_nvcc OBJECT ${ARG_SOURCES})
    target_include_directories(${target}_nvcc PRIVATE ${DRIFTSCOPE_SIMT_INCLUDE_DIR})
    # CMake 3.25 knows no CUDA20 dialect flag for nvcc (generation fails with
    # "requires the language dialect CUDA20"), so kernels are C++17 on nvcc.
    set_target_properties(${target}_nvcc PROPERTIES
      CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CUDA_STANDARD 17)
    foreach(lib IN LISTS ARG_LINK)
      if(TARGET ${lib})
        target_include_directories(${target}_nvcc PRIVATE $<TARGET_PROPERTY:${lib},INTERFACE_INCLUDE_DIRECTORIES>)
      endif()
    endforeach()
  endif()
endfunction()
