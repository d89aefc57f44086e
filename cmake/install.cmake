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
set(DS_EXPORTED driftscope_api)
if(TARGET driftscope_simt)
  list(APPEND DS_EXPORTED driftscope_simt driftscope_simt_cuda_compat)
  # The build step of driftscope_add_simt_kernel(), run by the outside project's build.
  install(TARGETS driftscope_simt_rewrite EXPORT driftscopeTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/driftscope)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/simt/include/simt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/driftscope
    FILES_MATCHING PATTERN "*.h")
  install(FILES ${CMAKE_SOURCE_DIR}/kernels/simt/cmake/SimtKernel.cmake DESTINATION ${DS_CMAKE_DIR})
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
# The checked kernel module --simt-racecheck loads (candidates/gpu/checked_kernels.cpp looks for it
# in PREFIX/<libdir>/driftscope).
if(TARGET driftscope AND TARGET ds_kernels_checked_module)
  install(TARGETS ds_kernels_checked_module LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/driftscope)
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/fixtures/policies ${CMAKE_SOURCE_DIR}/fixtures/dumps
  DESTINATION ${CMAKE_INSTALL_DATADIR}/driftscope FILES_MATCHING PATTERN "*.yaml")
