# Install the API headers + library so an outside project can
#   find_package(driftscope) and link driftscope::api to plug in its own kernel.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS driftscope_api EXPORT driftscopeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/harness/api/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/driftscope/api
  FILES_MATCHING PATTERN "*.h")
install(EXPORT driftscopeTargets NAMESPACE driftscope:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/driftscope)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/driftscopeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/driftscopeConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/driftscope)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/driftscopeConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/driftscopeConfig.cmake ${CMAKE_BINARY_DIR}/driftscopeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/driftscope)
if(TARGET driftscope)
  install(TARGETS driftscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
