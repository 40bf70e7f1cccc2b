# RE2, the linear-time regular-expression engine behind --filter (harness/base/pattern.hpp).
# Optional: without it the built-in matcher of the same patterns is used. Looked for as its
# CMake package (Ubuntu 24.04, builds from source), else through pkg-config (Debian 12's
# libre2-dev ships only re2.pc). Sets NB_RE2_TARGET (empty when not found) and NB_RE2_DETAIL.
# scripts/setup.sh's probe includes this file, so it reports RE2 as the build finds it.
option(NODEBENCH_WITH_RE2 "Match --filter with RE2 when it is found (else the built-in matcher)" ON)
set(NB_RE2_TARGET "")
set(NB_RE2_DETAIL "")
if(NODEBENCH_WITH_RE2)
  find_package(re2 CONFIG QUIET)
  if(TARGET re2::re2)
    set(NB_RE2_TARGET re2::re2)
    set(NB_RE2_DETAIL "re2 ${re2_VERSION} (CMake package)")
  else()
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(NB_RE2_PC QUIET IMPORTED_TARGET GLOBAL re2)
      if(NB_RE2_PC_FOUND)
        set(NB_RE2_TARGET PkgConfig::NB_RE2_PC)
        set(NB_RE2_DETAIL "re2 (pkg-config)")
        if(NB_RE2_PC_VERSION AND NOT NB_RE2_PC_VERSION VERSION_EQUAL 0.0.0)  # Debian's re2.pc says 0.0.0
          set(NB_RE2_DETAIL "re2 ${NB_RE2_PC_VERSION} (pkg-config)")
        endif()
      endif()
    endif()
  endif()
endif()
