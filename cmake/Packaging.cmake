# Install rules and packages (CPack: .deb and .tar.gz), for nodes that install nodebench instead
# of building it (README "Air-gapped install"). Included last by the top-level CMakeLists.txt.
#   cmake --install build --prefix /opt/nodebench
#   (cd build && cpack -G DEB)   -> build/nodebench_<version>_<arch>.deb
#   (cd build && cpack -G TGZ)   -> build/nodebench-<version>-Linux.tar.gz
# The binary carries its profiles built in; the JSON files and the schema are installed for
# people and tools that read them (the reports package has its own copy of the schema).
include(GNUInstallDirs)

# The installed binary keeps the run path of the libraries it linked outside the system's own
# folders (the CUDA toolkit's lib/, OpenMPI's), as the built one has: a runfile CUDA install
# does not always register its libraries with ldconfig.
set_target_properties(nodebench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS nodebench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES harness/profiles/compat.json harness/profiles/devices.json
              harness/profiles/frameworks.json harness/profiles/thresholds.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/nodebench/profiles)
install(FILES harness/schema/result-v1.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/nodebench/schema)
# For a cluster (README "On a cluster"): the Slurm health check and the Prometheus alerting rules.
install(PROGRAMS scripts/nodebench-healthcheck.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/nodebench/slurm)
install(FILES scripts/prometheus/nodebench.rules.yml scripts/prometheus/nodebench.rules.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/nodebench/prometheus)
file(GLOB _nb_docs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${_nb_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME nodebench)
set(CPACK_PACKAGE_VENDOR "nodebench")
set(CPACK_PACKAGE_CONTACT "nodebench maintainers <nodebench@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Benchmark and validation suite for multi-GPU training nodes")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_INSTALL_DIRECTORY nodebench)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# CPack puts the summary first and indents each line of this.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "The nodebench command measures GEMM, memory, host-link, peak, convolution, peer-to-peer
and NCCL performance, checks a node against profiles (doctor, validate) and writes versioned
result files (schema in /usr/share/nodebench/schema). It needs the NVIDIA driver and the CUDA
libraries it was built with (cuBLAS; cuDNN and NCCL when built with them): they come from
NVIDIA's packages, not Debian's, so they are not listed as dependencies.")
# Dependencies: only what Debian packages provide. dpkg-shlibdeps is not used because it fails on
# the CUDA libraries (installed from NVIDIA's runfile or repository, unknown to dpkg). The shared
# libraries the build linked from Debian packages (Google Benchmark, MPI) are named by the
# package that owns them on the build machine, so the .deb fits the Debian or Ubuntu it was
# built on.
set(_nb_deb_depends "libc6 (>= 2.34), libstdc++6, libgcc-s1")
find_program(NB_DPKG_QUERY dpkg-query)
function(_nb_deb_owner lib out)
  set(${out} "" PARENT_SCOPE)
  if(NOT NB_DPKG_QUERY OR NOT lib MATCHES "\\.so")
    return()
  endif()
  file(REAL_PATH "${lib}" _real)
  execute_process(COMMAND ${NB_DPKG_QUERY} -S "${_real}" OUTPUT_VARIABLE _o RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND _o MATCHES "^([^:, ]+)(:[a-z0-9]+)?: ")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  endif()
endfunction()
set(_nb_linked_libs)
get_target_property(_cfgs benchmark::benchmark IMPORTED_CONFIGURATIONS)
set(_props IMPORTED_LOCATION)
foreach(_c IN LISTS _cfgs)
  list(APPEND _props IMPORTED_LOCATION_${_c})
endforeach()
foreach(_p IN LISTS _props)
  get_target_property(_loc benchmark::benchmark ${_p})
  if(_loc)
    list(APPEND _nb_linked_libs "${_loc}")
    break()
  endif()
endforeach()
if(NODEBENCH_WITH_MPI AND TARGET MPI::MPI_CXX)  # made global in harness/
  get_target_property(_mpi_libs MPI::MPI_CXX INTERFACE_LINK_LIBRARIES)
  if(_mpi_libs)
    list(APPEND _nb_linked_libs ${_mpi_libs})
  endif()
endif()
set(_nb_owners)
foreach(_lib IN LISTS _nb_linked_libs)
  _nb_deb_owner("${_lib}" _pkg)
  if(_pkg AND NOT _pkg MATCHES "-dev$")
    list(APPEND _nb_owners ${_pkg})
  endif()
endforeach()
list(REMOVE_DUPLICATES _nb_owners)
foreach(_pkg IN LISTS _nb_owners)
  string(APPEND _nb_deb_depends ", ${_pkg}")
endforeach()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_nb_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
