# The layers of the library and the families, as build targets (docs/ARCHITECTURE.md).
#
# Every include of our own code is by path ("run/plan.hpp", "kernels/train/train_kernels.cuh",
# "shared/cudnn/cudnn_conv.hpp"), and a target sees a path only when it links the target that
# owns the folder: nb_expose gives each target an include root of its own in the build tree that
# holds one link, <root>/<alias> -> the folder. So `#include "run/plan.hpp"` in node/ does not
# compile: nb_node links nothing that exposes run/. tests/layering checks this stays so.

# Makes `#include "<alias>/file"` resolve to <dir>/file for `target` and whatever links it.
function(nb_expose target alias dir)
  string(MAKE_C_IDENTIFIER "${alias}" _id)
  set(_root "${CMAKE_BINARY_DIR}/nb_include/${target}_${_id}")
  set(_link "${_root}/${alias}")
  get_filename_component(_parent "${_link}" DIRECTORY)
  file(MAKE_DIRECTORY "${_parent}")
  if(NOT IS_SYMLINK "${_link}")
    file(CREATE_LINK "${dir}" "${_link}" SYMBOLIC)
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE "${_root}")
  else()
    target_include_directories(${target} PUBLIC "${_root}")
  endif()
  set_property(GLOBAL APPEND PROPERTY NB_EXPOSED "${target}=${alias}")
endfunction()

# nb_layer(NAME SOURCES ... DEPS ...): the static library nb_<NAME> built from harness/<NAME>/,
# exposing harness/<NAME> as "<NAME>/...", linking only the layers below it (DEPS).
function(nb_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  add_library(nb_${name} STATIC ${L_SOURCES})
  nb_expose(nb_${name} ${name} "${CMAKE_CURRENT_SOURCE_DIR}/${name}")
  target_link_libraries(nb_${name} PUBLIC ${L_DEPS})
  target_compile_options(nb_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  set_target_properties(nb_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set_property(GLOBAL APPEND PROPERTY NB_LAYERS nb_${name})
endfunction()

# nb_kernel_lib(NAME SOURCES ...): kernels/<NAME>/ as nb_kernels_<NAME>, included as
# "kernels/<NAME>/...". Kernels use CUDA headers only.
function(nb_kernel_lib name)
  cmake_parse_arguments(K "" "" "SOURCES;DEPS" ${ARGN})
  add_library(nb_kernels_${name} STATIC ${K_SOURCES})
  nb_expose(nb_kernels_${name} kernels/${name} "${CMAKE_CURRENT_SOURCE_DIR}/${name}")
  target_link_libraries(nb_kernels_${name} PUBLIC CUDA::cudart ${K_DEPS})
  set_target_properties(nb_kernels_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# nb_family(NAME SOURCES ... [KERNELS k ...] [SHARED s ...] [LIBS ...] [INCLUDES dir ...]
#           [DEFINITIONS ...] [THRESHOLDS file] [TEST_ONLY]): the family in the folder of the
# family.cmake that calls it (benchmarks/<NAME>/; the paths are relative to that folder).
# THRESHOLDS: its validate threshold keys (a thresholds.json fragment), built in through a
# generated registrar (cmake/family_thresholds.cpp.in) and merged over the core file.
# Its files register the family from static initialisers, so it is an object library whose
# objects are linked whole into nodebench and the unit tests (nb_link_families); a TEST_ONLY
# family (the example in tests/example_family/) is linked only where it is named, e.g. into its
# own test binary by nb_family_tests (tests/CMakeLists.txt). It sees the library up to the
# bench layer, its own kernels (kernels/<k>/), the shared code it names (benchmarks/shared/<s>/)
# and its own folder; nothing of run/, output/, check/ or app/.
function(nb_family name)
  cmake_parse_arguments(F "TEST_ONLY" "THRESHOLDS" "SOURCES;KERNELS;SHARED;LIBS;INCLUDES;DEFINITIONS" ${ARGN})
  set(_srcs)
  foreach(_s ${F_SOURCES})
    list(APPEND _srcs "${CMAKE_CURRENT_LIST_DIR}/${_s}")
  endforeach()
  if(F_THRESHOLDS)
    set(_json "${CMAKE_CURRENT_LIST_DIR}/${F_THRESHOLDS}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_json}")
    file(READ "${_json}" NB_THRESHOLDS_TEXT)
    set(NB_THRESHOLDS_FAMILY "${name}")
    file(RELATIVE_PATH NB_THRESHOLDS_ORIGIN "${CMAKE_SOURCE_DIR}" "${_json}")
    set(_gen "${CMAKE_BINARY_DIR}/generated/family_${name}_thresholds.cpp")
    configure_file("${CMAKE_SOURCE_DIR}/cmake/family_thresholds.cpp.in" "${_gen}" @ONLY)
    list(APPEND _srcs "${_gen}")
  endif()
  add_library(nb_family_${name} OBJECT ${_srcs})
  target_link_libraries(nb_family_${name} PUBLIC nb_bench)
  foreach(_k ${F_KERNELS})
    target_link_libraries(nb_family_${name} PUBLIC nb_kernels_${_k})
  endforeach()
  foreach(_s ${F_SHARED})
    target_link_libraries(nb_family_${name} PUBLIC nb_shared_${_s})
  endforeach()
  target_link_libraries(nb_family_${name} PUBLIC ${F_LIBS})
  if(F_INCLUDES)
    target_include_directories(nb_family_${name} PRIVATE ${F_INCLUDES})
  endif()
  if(F_DEFINITIONS)
    target_compile_definitions(nb_family_${name} PRIVATE ${F_DEFINITIONS})
  endif()
  target_compile_options(nb_family_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  set_target_properties(nb_family_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set_target_properties(nb_family_${name} PROPERTIES NB_FAMILY_DIR "${CMAKE_CURRENT_LIST_DIR}")
  if(NOT F_TEST_ONLY)
    set_property(GLOBAL APPEND PROPERTY NB_FAMILIES nb_family_${name})
  endif()
endfunction()

# A family that cannot be built here (a missing optional library): said once at configure time.
function(nb_family_not_built name why)
  message(STATUS "nodebench: family ${name} not built: ${why}")
  set_property(GLOBAL APPEND PROPERTY NB_FAMILIES_NOT_BUILT "${name}")
endfunction()

# Links every family into `target` (nodebench, the unit tests).
function(nb_link_families target)
  get_property(_fams GLOBAL PROPERTY NB_FAMILIES)
  target_link_libraries(${target} PRIVATE ${_fams})
endfunction()
