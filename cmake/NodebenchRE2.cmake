# RE2, the linear-time regular-expression engine behind --filter (harness/base/pattern.hpp):
# required. Linked statically, as libjpeg-turbo is (benchmarks/input/family.cmake), so the binary
# needs no libre2 where it runs: re2/re2.h and libre2.a under RE2_ROOT (e.g. Debian's libre2-dev
# unpacked with dpkg -x, for a machine without network: scripts/dev/device/carry_re2.sh puts it
# in .deps/re2, which is looked at too), then the system (Debian 12's libre2-dev ships libre2.a).
# An RE2 of 2023 or later needs Abseil: then its CMake package is used (re2::re2: Ubuntu 24.04's
# libre2-dev, or one built from source), which brings Abseil along. Sets NB_RE2_TARGET and
# NB_RE2_DETAIL; when RE2 is missing the configure stops naming the package, unless
# NB_RE2_PROBE_ONLY is set (scripts/setup.sh's probe includes this file and reports it missing).
set(NB_RE2_TARGET "")
set(NB_RE2_DETAIL "")
set(_nb_re2_roots ${RE2_ROOT} $ENV{RE2_ROOT} ${CMAKE_CURRENT_LIST_DIR}/../.deps/re2)
set(_nb_re2_lib lib lib64 usr/lib/x86_64-linux-gnu usr/lib/aarch64-linux-gnu lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
find_path(NB_RE2_INCLUDE_DIR re2/re2.h HINTS ${_nb_re2_roots} PATH_SUFFIXES include usr/include)
find_library(NB_RE2_STATIC NAMES libre2.a HINTS ${_nb_re2_roots} PATH_SUFFIXES ${_nb_re2_lib})
set(_nb_re2_absl "")
if(NB_RE2_INCLUDE_DIR AND NB_RE2_STATIC)
  file(STRINGS "${NB_RE2_INCLUDE_DIR}/re2/re2.h" _nb_re2_absl REGEX "#include \"absl/")
endif()
if(NB_RE2_INCLUDE_DIR AND NB_RE2_STATIC AND NOT _nb_re2_absl)
  if(NOT TARGET nb_re2)
    add_library(nb_re2 STATIC IMPORTED GLOBAL)
    set_target_properties(nb_re2 PROPERTIES IMPORTED_LOCATION "${NB_RE2_STATIC}"
                                            INTERFACE_INCLUDE_DIRECTORIES "${NB_RE2_INCLUDE_DIR}")
  endif()
  set(NB_RE2_TARGET nb_re2)
  set(NB_RE2_DETAIL "${NB_RE2_STATIC}")
else()
  find_package(re2 CONFIG QUIET)
  if(TARGET re2::re2)
    set(NB_RE2_TARGET re2::re2)
    set(NB_RE2_DETAIL "re2 ${re2_VERSION} (CMake package)")
  endif()
endif()
if(NOT NB_RE2_TARGET AND NOT NB_RE2_PROBE_ONLY)
  message(FATAL_ERROR "nodebench: RE2 not found (--filter's engine): apt-get install libre2-dev, or set RE2_ROOT to a "
                      "folder with include/re2/re2.h and libre2.a (Debian's libre2-dev unpacked: "
                      "scripts/dev/device/carry_re2.sh)")
endif()
