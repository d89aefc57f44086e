# The SDK: what an outside project gets from `cmake --install` and `find_package(driftscope)`:
#   driftscope::api    the vocabulary, the Candidate interface and the plugin entry point
#   driftscope::simt   the SIMT runtime (kernels include "simt/simt.h")
#   driftscope_add_simt_kernel()  one .cu built through SIMT for the CPU and, with nvcc, for the GPU
#   bin/driftscope, bin/driftscope-view
#   share/driftscope/policies/*.yaml, share/driftscope/dumps/*.yaml: what `--policy NAME` and
#   `export --mapping NAME` find by name (harness/cli/install_paths.cpp)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(DS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/driftscope)

# `cmake --install` copies what the build made and builds nothing: after a partial build (the
# demo's) it would stop at the first missing file with the prefix half written. So it checks
# every program and module it will copy first, and names the command that builds them.
set(DS_KERNEL_MODULES ds_kernels_checked_module ds_kernels_cuda_module)
foreach(m IN LISTS DS_MUTANT_MODULES)
  list(APPEND DS_KERNEL_MODULES ds_mutant_${m}_module)
endforeach()
set(DS_INSTALLED_FILES "")
foreach(t driftscope driftscope-view ${DS_KERNEL_MODULES} driftscope_simt_rewrite)
  if(TARGET ${t})
    list(APPEND DS_INSTALLED_FILES "$<TARGET_FILE:${t}>")
  endif()
endforeach()
# The command stands on an indented line of its own: CMake wraps a message's other lines, and a
# long build path would break across two.
install(CODE "
  set(missing \"\")
  foreach(f ${DS_INSTALLED_FILES})
    if(NOT EXISTS \"\${f}\")
      list(APPEND missing \"\${f}\")
    endif()
  endforeach()
  if(missing)
    list(JOIN missing \"\n  \" text)
    message(FATAL_ERROR \"not built yet, so nothing was installed:\n  \${text}\nBuild everything first:\n  cmake --build ${CMAKE_BINARY_DIR}\")
  endif()
")
set(DS_EXPORTED driftscope_api)
if(TARGET driftscope_simt)
  list(APPEND DS_EXPORTED driftscope_simt driftscope_simt_cuda_compat)
  # The build step of driftscope_add_simt_kernel(), run by the outside project's build.
  install(TARGETS driftscope_simt_rewrite EXPORT driftscopeTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/driftscope)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/simt/include/simt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/driftscope
    FILES_MATCHING PATTERN "*.h")
  install(FILES ${CMAKE_SOURCE_DIR}/kernels/simt/cmake/SimtKernel.cmake
    ${CMAKE_SOURCE_DIR}/kernels/simt/cmake/SimtUndefined.cmake DESTINATION ${DS_CMAKE_DIR})
  set(DS_HAVE_SIMT ON)
else()
  set(DS_HAVE_SIMT OFF)
endif()
install(TARGETS ${DS_EXPORTED} EXPORT driftscopeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/harness/api/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/driftscope/api
  FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/generated/api/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/driftscope/api)
install(EXPORT driftscopeTargets NAMESPACE driftscope:: DESTINATION ${DS_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/driftscopeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/driftscopeConfig.cmake INSTALL_DESTINATION ${DS_CMAKE_DIR} PATH_VARS CMAKE_INSTALL_BINDIR)
# 0.x: every minor release may change the plugin ABI, so only the same minor version matches.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/driftscopeConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/driftscopeConfig.cmake ${CMAKE_BINARY_DIR}/driftscopeConfigVersion.cmake
  DESTINATION ${DS_CMAKE_DIR})
foreach(program driftscope driftscope-view)
  if(TARGET ${program})
    install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
# The kernel modules driftscope loads on first use: the checked flavour (--simt-racecheck), the
# nvcc flavour (the cuda candidate) and each kernel mutant (mutant:<name>);
# candidates/gpu/kernel_module.cpp looks in PREFIX/<libdir>/driftscope.
foreach(module IN LISTS DS_KERNEL_MODULES)
  if(TARGET driftscope AND TARGET ${module})
    install(TARGETS ${module} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/driftscope)
  endif()
endforeach()
# The Python SDK (docs/python.md): py:FILE.py candidates import it, and driftscope.trace reads traces.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/driftscope DESTINATION ${CMAKE_INSTALL_DATADIR}/driftscope/python
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/fixtures/policies ${CMAKE_SOURCE_DIR}/fixtures/dumps
  ${CMAKE_SOURCE_DIR}/fixtures/batches
  DESTINATION ${CMAKE_INSTALL_DATADIR}/driftscope FILES_MATCHING PATTERN "*.yaml")
